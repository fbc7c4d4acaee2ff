"""One module per API: each defines REQUEST and RESPONSE (protocol.schema.message),
named after the API (Kafka's message name in snake case). By family:

    data            produce, fetch, list_offsets, metadata, offset_for_leader_epoch,
                    delete_records, describe_producers
    groups          find_coordinator, join_group, sync_group, heartbeat, leave_group,
                    offset_commit, offset_fetch, offset_delete, describe_groups,
                    list_groups, delete_groups, consumer_group_heartbeat,
                    consumer_group_describe
    transactions    init_producer_id, add_partitions_to_txn, add_offsets_to_txn,
                    txn_offset_commit, end_txn, write_txn_markers,
                    describe_transactions, list_transactions
    admin           create_topics, delete_topics, create_partitions, describe_cluster,
                    describe_configs, alter_configs, incremental_alter_configs,
                    elect_leaders, alter_partition_reassignments,
                    list_partition_reassignments,
                    describe_log_dirs, alter_replica_log_dirs, describe_client_quotas,
                    alter_client_quotas
    security        api_versions, sasl_handshake, sasl_authenticate, create_acls,
                    describe_acls, delete_acls, describe_user_scram_credentials,
                    alter_user_scram_credentials
    inter-broker    leader_and_isr, update_metadata, stop_replica, controlled_shutdown,
                    alter_partition
    pybroker/       pybroker's own APIs (DescribeWhy)

The registry is discovered from this package, so adding an API is adding a file.
``all_apis()`` is Kafka 3.9's catalogue (this package's modules: what the
cross-checks compare with Kafka and ApiVersions may advertise);
``pybroker_apis()`` are pybroker's own (the ``pybroker`` subpackage, keys from
10000, never advertised); ``wire_apis()`` and ``api()`` know both (what the
header and body codecs look up).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache

from protocol.schema import MessageSpec


@dataclass(frozen=True)
class ApiSpec:
    api_key: int
    name: str                 # e.g. "Produce"
    request: MessageSpec
    response: MessageSpec


@cache
def all_apis() -> dict[int, ApiSpec]:
    """api key -> ApiSpec for every module in this package (Kafka's APIs)."""
    return _discover(__name__, __path__)


@cache
def pybroker_apis() -> dict[int, ApiSpec]:
    """api key -> ApiSpec for pybroker's own APIs (``protocol.spec.pybroker``)."""
    from protocol.spec import pybroker
    return _discover(pybroker.__name__, pybroker.__path__)


@cache
def wire_apis() -> dict[int, ApiSpec]:
    """Every API the codecs know: Kafka's and pybroker's own, by key."""
    return {**all_apis(), **pybroker_apis()}


def _discover(package: str, path: list[str]) -> dict[int, ApiSpec]:
    apis: dict[int, ApiSpec] = {}
    for info in pkgutil.iter_modules(path):
        if info.ispkg:
            continue
        mod = importlib.import_module(f"{package}.{info.name}")
        req: MessageSpec = mod.REQUEST
        resp: MessageSpec = mod.RESPONSE
        if req.api_key != resp.api_key or req.valid != resp.valid:
            raise ValueError(f"{info.name}: request/response disagree on key or versions")
        if req.api_key in apis:
            raise ValueError(f"{info.name}: api key {req.api_key} declared twice")
        apis[req.api_key] = ApiSpec(req.api_key, req.name.removesuffix("Request"), req, resp)
    return dict(sorted(apis.items()))


def api(api_key: int) -> ApiSpec:
    return wire_apis()[api_key]
