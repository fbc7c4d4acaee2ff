"""DescribeClientQuotas (API key 48), versions 0-1, as Kafka 3.9's ZooKeeper-mode broker
(KafkaApis.handleDescribeClientQuotasRequest, ZkAdminManager.describeClientQuotas).

* The caller needs DESCRIBE_CONFIGS on the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED
  (top level, Entries null).
* The filter is checked as Kafka checks it (broker/quotas/admin_rules.py): a bad match
  type or a duplicate / empty entity type -> INVALID_REQUEST, an unknown entity type ->
  UNSUPPORTED_VERSION; the message says which.
* Every user, client-id and (user, client-id) entity with a quota key is read from
  ZooKeeper (quota_store.py) and the filter keeps the matching ones; each answers its
  (type, name) pairs -- name null for <default> -- and its quota values as doubles.
  A ZooKeeper failure -> UNKNOWN_SERVER_ERROR at the top level.
"""

from __future__ import annotations

import logging

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from broker.quotas.admin_rules import Component, QuotaFilter, QuotaRequestError, entity_parts
from broker.quotas.quota_store import QuotaStore
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.DESCRIBE_CLIENT_QUOTAS).response
ENTRY = SPEC.structs["EntryData"]
ENTITY = SPEC.structs["EntityData"]
VALUE = SPEC.structs["ValueData"]
CLUSTER_DENIED = "Cluster authorization failed."


def _error(code: int, message: str | None) -> Struct:
    return SPEC.new(throttle_time_ms=0, error_code=code, error_message=message, entries=None)


@handler(ApiKey.DESCRIBE_CLIENT_QUOTAS)
async def handle_describe_client_quotas(ctx: RequestContext, request: Struct) -> Struct:
    if not allowed_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED)
    try:
        quota_filter = QuotaFilter([Component(c.entity_type, c.match_type, c.match)
                                    for c in request.components], request.strict)
    except QuotaRequestError as e:
        return _error(e.code, str(e))
    try:
        entities = await QuotaStore(ctx.broker.cluster).read_all()
    except Exception as e:
        log.warning("describing client quotas failed: %s", e)
        return _error(ErrorCode.UNKNOWN_SERVER_ERROR, str(e) or type(e).__name__)
    entries = [ENTRY.new(entity=[ENTITY.new(entity_type=t, entity_name=n)
                                 for t, n in entity_parts(entity)],
                         values=[VALUE.new(key=k, value=v) for k, v in values.items()])
               for entity, values in entities.items() if quota_filter.matches(entity)]
    return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                    entries=entries)
