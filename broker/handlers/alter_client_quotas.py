"""AlterClientQuotas (API key 49), versions 0-1, as Kafka 3.9's ZooKeeper-mode broker
(KafkaApis.handleAlterClientQuotasRequest, ZkAdminManager.alterClientQuotas).

* The caller needs ALTER_CONFIGS on the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED
  for every entry.
* Per entry (one result each, naming the entity back): the entity and operations are
  checked as Kafka checks them (broker/quotas/admin_rules.py: empty entity, unknown or
  repeated type, empty name, unknown key, a byte rate that is not a whole number ->
  INVALID_REQUEST with the reason); then, unless ValidateOnly, the entity's znode in
  /config/users or /config/clients is rewritten with every other key kept (a user's
  SCRAM credentials) and a /config/changes notification is created, on which every
  broker re-reads the entity (broker/quotas/client_quotas.py). A write that fails ->
  UNKNOWN_SERVER_ERROR for that entry.
* As our other ZooKeeper admin writes, any broker writes (Kafka's ZooKeeper brokers
  answer it on any broker too: it is not a controller request).
"""

from __future__ import annotations

import logging

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from broker.quotas.admin_rules import QuotaRequestError, parse_entity, parse_ops
from broker.quotas.quota_store import QuotaStore
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.ALTER_CLIENT_QUOTAS).response
ENTRY = SPEC.structs["EntryData"]
ENTITY = SPEC.structs["EntityData"]
CLUSTER_DENIED = "Cluster authorization failed."


@handler(ApiKey.ALTER_CLIENT_QUOTAS)
async def handle_alter_client_quotas(ctx: RequestContext, request: Struct) -> Struct:
    allowed = allowed_cluster(ctx, AclOperation.ALTER_CONFIGS)
    store = QuotaStore(ctx.broker.cluster)
    results = []
    for entry in request.entries:
        code, message = ErrorCode.NONE, None
        if not allowed:
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED
        else:
            try:
                entity = parse_entity([(e.entity_type, e.entity_name) for e in entry.entity])
                changes = parse_ops([(o.key, o.value, o.remove) for o in entry.ops])
                if not request.validate_only:
                    await store.alter(entity, changes)
            except QuotaRequestError as e:
                code, message = e.code, str(e)
            except Exception as e:
                log.warning("altering client quotas failed: %s", e)
                code, message = ErrorCode.UNKNOWN_SERVER_ERROR, str(e) or type(e).__name__
        results.append(ENTRY.new(error_code=code, error_message=message, entity=[
            ENTITY.new(entity_type=e.entity_type, entity_name=e.entity_name)
            for e in entry.entity]))
    return SPEC.new(throttle_time_ms=0, entries=results)
