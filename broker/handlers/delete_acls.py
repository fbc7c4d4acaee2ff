"""DeleteAcls (API key 31), versions 0-3, as Kafka's AclApis.handleDeleteAcls.

* No authorizer -> SECURITY_DISABLED on every filter; the caller needs ALTER on
  the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED on every filter.
* A filter with an UNKNOWN element -> INVALID_REQUEST on every filter (Kafka
  refuses the whole request). v0 filters are LITERAL (ANY read as LITERAL).
* Otherwise each filter's result lists the bindings it deleted (a binding
  matched by several filters is reported under the first), each with its own
  error code (NONE when deleted).
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import binding_filter
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DELETE_ACLS).response
FILTER_RESULT = SPEC.structs["DeleteAclsFilterResult"]
MATCHING = SPEC.structs["DeleteAclsMatchingAcl"]


@handler(ApiKey.DELETE_ACLS)
async def handle_delete_acls(ctx: RequestContext, request: Struct) -> Struct:
    n = len(request.filters)
    auth = ctx.broker.authorizer
    if not allowed_cluster(ctx, AclOperation.ALTER):
        return _all(n, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    if auth is None:
        return _all(n, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    parsed = [binding_filter(ctx.version, f) for f in request.filters]
    filters = [f for f in parsed if f is not None]
    if len(filters) < len(parsed):
        return _all(n, ErrorCode.INVALID_REQUEST, "Filters contain UNKNOWN elements")
    deleted = await auth.delete_acls(filters)
    results = []
    for per_filter in deleted:
        results.append(FILTER_RESULT.new(error_code=0, error_message=None, matching_acls=[
            MATCHING.new(error_code=int(code), error_message=message,
                         resource_type=int(b.pattern.resource_type),
                         resource_name=b.pattern.name, pattern_type=int(b.pattern.pattern_type),
                         principal=b.entry.principal, host=b.entry.host,
                         operation=int(b.entry.operation),
                         permission_type=int(b.entry.permission))
            for b, code, message in per_filter]))
    return SPEC.new(throttle_time_ms=0, filter_results=results)


def _all(n: int, code: ErrorCode, message: str | None) -> Struct:
    return SPEC.new(throttle_time_ms=0, filter_results=[
        FILTER_RESULT.new(error_code=int(code), error_message=message, matching_acls=[])
        for _ in range(n)])
