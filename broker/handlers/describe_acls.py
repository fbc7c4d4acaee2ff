"""DescribeAcls (API key 29), versions 0-3, as Kafka's AclApis.handleDescribeAcls.

* No authorizer configured -> SECURITY_DISABLED ("No Authorizer is configured
  on the broker").
* The caller needs DESCRIBE on the CLUSTER -> else CLUSTER_AUTHORIZATION_FAILED.
* A filter with an UNKNOWN (code 0) element -> INVALID_REQUEST. v0 has no
  pattern type: its filters are LITERAL (ANY is read as LITERAL there, as Kafka
  normalises it).
* Otherwise every stored binding the filter matches, grouped by resource
  pattern (resource type, name, pattern type) with its entries.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourcePattern
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from broker.handler_support import binding_filter
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DESCRIBE_ACLS).response
RESOURCE = SPEC.structs["DescribeAclsResource"]
ACL = SPEC.structs["AclDescription"]


@handler(ApiKey.DESCRIBE_ACLS)
async def handle_describe_acls(ctx: RequestContext, request: Struct) -> Struct:
    response = SPEC.new(throttle_time_ms=0, error_code=0, error_message=None, resources=[])
    auth = ctx.broker.authorizer
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        response.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return response
    if auth is None:
        response.error_code = ErrorCode.SECURITY_DISABLED
        response.error_message = "No Authorizer is configured on the broker"
        return response
    f = binding_filter(ctx.version, request)
    if f is None:
        response.error_code = ErrorCode.INVALID_REQUEST
        response.error_message = "DescribeAclsRequest contains UNKNOWN elements"
        return response
    grouped: dict[ResourcePattern, list[Struct]] = {}
    for b in auth.acls(f):
        grouped.setdefault(b.pattern, []).append(ACL.new(
            principal=b.entry.principal, host=b.entry.host, operation=int(b.entry.operation),
            permission_type=int(b.entry.permission)))
    response.resources = [
        RESOURCE.new(resource_type=int(p.resource_type), resource_name=p.name,
                     pattern_type=int(p.pattern_type), acls=acls)
        for p, acls in grouped.items()]
    return response
