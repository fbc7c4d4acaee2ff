"""AlterUserScramCredentials (API key 51), version 0, as Kafka 3.9's ZooKeeper-mode
broker (KafkaApis.handleAlterUserScramCredentialsRequest, ZkAdminManager).

* The caller needs ALTER on the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED for every
  user named (Kafka's getErrorResponse: distinct users, sorted).
* Per user (any refused alteration refuses all of that user's; nothing of it is written):
  an empty name -> UNACCEPTABLE_CREDENTIAL; a mechanism other than 1 (SCRAM-SHA-256) or
  2 (SCRAM-SHA-512) -> UNSUPPORTED_SASL_MECHANISM; an upsertion's iterations below 4096
  or above 16384 -> UNACCEPTABLE_CREDENTIAL; one credential (user, mechanism) named twice,
  e.g. upserted and deleted -> DUPLICATE_RESOURCE; deleting a credential the user lacks
  -> RESOURCE_NOT_FOUND. The rest are written to /config/users/<user> (StoredKey and
  ServerKey derived from the client's salted password) with a change notification, by
  broker/security/scram_credentials.py.
* Kafka's ZooKeeper brokers answer NOT_CONTROLLER unless they are the controller; here
  any broker writes (conditional ZooKeeper writes keep concurrent writers apart), as our
  CreateTopics does. Clients send it to the controller all the same.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from broker.security.scram_credentials import Deletion, Upsertion
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.scram import MECHANISMS
from protocol.spec import api

SPEC = api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS).response
RESULT = SPEC.structs["AlterUserScramCredentialsResult"]
CLUSTER_DENIED = "Cluster authorization failed."   # Kafka's ClusterAuthorizationException text
MECHANISM_NAMES = {m.wire_type: m.name for m in MECHANISMS.values()}


def mechanism_name(code: int) -> str:
    """The mechanism's name; an unknown code gets a name no mechanism has (so the store
    refuses it with UNSUPPORTED_SASL_MECHANISM)."""
    return MECHANISM_NAMES.get(code, f"UNKNOWN({code})")


@handler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
async def handle_alter_user_scram_credentials(ctx: RequestContext, request: Struct) -> Struct:
    if not allowed_cluster(ctx, AclOperation.ALTER):
        users = sorted({a.name for a in [*request.deletions, *request.upsertions]})
        return SPEC.new(throttle_time_ms=0, results=[
            RESULT.new(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                       error_message=CLUSTER_DENIED) for u in users])
    upsertions = [Upsertion(u.name, mechanism_name(u.mechanism), u.iterations, u.salt,
                            u.salted_password) for u in request.upsertions]
    deletions = [Deletion(d.name, mechanism_name(d.mechanism)) for d in request.deletions]
    results = await ctx.broker.scram_credentials.alter(upsertions, deletions)
    return SPEC.new(throttle_time_ms=0, results=[
        RESULT.new(user=user, error_code=int(code), error_message=message)
        for user, (code, message) in results.items()])
