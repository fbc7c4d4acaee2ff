"""CreateAcls (API key 30), versions 0-3, as Kafka's AclApis.handleCreateAcls.

* No authorizer -> SECURITY_DISABLED on every creation; the caller needs ALTER
  on the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED on every creation.
* Per creation: a CLUSTER resource not named "kafka-cluster", an empty name,
  an UNKNOWN/ANY/MATCH element, a name with "/" or a principal without
  "type:" -> INVALID_REQUEST; the rest are written to ZooKeeper (grouped per
  resource, broker/acl/acl_store.py) and announced to every broker.
* v0 has no pattern type: its creations are LITERAL.
"""

from __future__ import annotations

from broker.acl.acl_model import (CLUSTER_NAME, AccessControlEntry, AclBinding, AclOperation,
                                  PatternType, PermissionType, ResourcePattern, ResourceType)
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.CREATE_ACLS).response
RESULT = SPEC.structs["AclCreationResult"]


def _binding(c: Struct) -> AclBinding | str:
    """The creation as a binding, or why it is invalid."""
    try:
        b = AclBinding(
            ResourcePattern(ResourceType(c.resource_type), c.resource_name,
                            PatternType(c.resource_pattern_type)),
            AccessControlEntry(c.principal, c.host, AclOperation(c.operation),
                               PermissionType(c.permission_type)))
    except ValueError as e:
        return f"CreatableAcls contain unknown elements: {e}"
    if b.pattern.resource_type == ResourceType.CLUSTER and b.pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if b.pattern.name == "":
        return "Invalid empty resource name"
    return b


@handler(ApiKey.CREATE_ACLS)
async def handle_create_acls(ctx: RequestContext, request: Struct) -> Struct:
    creations = request.creations
    auth = ctx.broker.authorizer
    if not allowed_cluster(ctx, AclOperation.ALTER):
        return _all(len(creations), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if auth is None:
        return _all(len(creations), ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results: list[Struct] = [RESULT.new(error_code=0, error_message=None) for _ in creations]
    valid: list[tuple[int, AclBinding]] = []
    for i, c in enumerate(creations):
        b = _binding(c)
        if isinstance(b, str):
            results[i].error_code, results[i].error_message = ErrorCode.INVALID_REQUEST, b
        else:
            valid.append((i, b))
    outcomes = await auth.create_acls([b for _, b in valid])
    for (i, _), (code, message) in zip(valid, outcomes):
        results[i].error_code, results[i].error_message = int(code), message
    return SPEC.new(throttle_time_ms=0, results=results)


def _all(n: int, code: ErrorCode, message: str | None) -> Struct:
    return SPEC.new(throttle_time_ms=0, results=[
        RESULT.new(error_code=int(code), error_message=message) for _ in range(n)])
