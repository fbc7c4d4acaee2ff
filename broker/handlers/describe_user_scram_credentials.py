"""DescribeUserScramCredentials (API key 50), version 0, as Kafka 3.9's ZooKeeper-mode
broker (KafkaApis.handleDescribeUserScramCredentialsRequest, ZkAdminManager).

* The caller needs DESCRIBE on the CLUSTER -> else top-level CLUSTER_AUTHORIZATION_FAILED,
  with one result per user named carrying it too (Kafka's getErrorResponse, user left "").
* Users null or empty: every user holding a SCRAM credential in /config/users, by name;
  a ZooKeeper failure -> top-level UNKNOWN_SERVER_ERROR.
* Users named: each distinct name once, in request order: "" -> RESOURCE_NOT_FOUND
  ("Username must not be empty"), a name given twice -> DUPLICATE_RESOURCE, a user with
  no SCRAM credential -> RESOURCE_NOT_FOUND.
* A result lists the user's mechanisms (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512) with their
  iteration counts. The store (broker/security/scram_credentials.py) reads ZooKeeper on
  every request; any broker answers.
"""

from __future__ import annotations

import logging

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.scram import MECHANISMS
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS).response
RESULT = SPEC.structs["DescribeUserScramCredentialsResult"]
INFO = SPEC.structs["CredentialInfo"]
CLUSTER_DENIED = "Cluster authorization failed."   # Kafka's ClusterAuthorizationException text


@handler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
async def handle_describe_user_scram_credentials(ctx: RequestContext, request: Struct) -> Struct:
    users = None if request.users is None else [u.name for u in request.users]
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED, len(users or []))
    try:
        described = await ctx.broker.scram_credentials.describe(users)
    except Exception as e:  # listing /config/users failed (ZooKeeper unreachable, ...)
        log.warning("DescribeUserScramCredentials failed: %s", e)
        return _error(ErrorCode.UNKNOWN_SERVER_ERROR, str(e) or type(e).__name__, 0)
    return SPEC.new(throttle_time_ms=0, error_code=0, error_message=None, results=[
        RESULT.new(user=d.user, error_code=int(d.error), error_message=d.message,
                   credential_infos=[INFO.new(mechanism=MECHANISMS[c.mechanism].wire_type,
                                              iterations=c.iterations)
                                     for c in d.credentials])
        for d in described])


def _error(code: ErrorCode, message: str, users: int) -> Struct:
    return SPEC.new(throttle_time_ms=0, error_code=int(code), error_message=message, results=[
        RESULT.new(user="", error_code=int(code), error_message=message, credential_infos=[])
        for _ in range(users)])
