"""The ACL verbs (DescribeAcls, CreateAcls, DeleteAcls) and ``AclAdmin``, which
routes them over a ``KafkaAdmin`` (for ``pybroker acls``, Kafka's kafka-acls).

The vocabulary is Kafka's (org.apache.kafka.common.acl / .resource), with the
wire codes of those three APIs; ``str()`` of a pattern, filter or entry is the
Java ``toString`` kafka-acls prints::

    ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)
    (principal=User:alice, host=*, operation=READ, permissionType=ALLOW)

ANY and MATCH exist only in filters (a stored binding is concrete). A ZooKeeper
broker stores ACLs in ZooKeeper itself, so any broker takes them; the others
learn them from ZooKeeper's change notifications.
"""

from __future__ import annotations

from dataclasses import dataclass

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.errors import NoCommonVersion
from protocol.api_keys import ApiKey
from protocol.acl_types import (CLUSTER_NAME, SUPPORTED_OPERATIONS, WILDCARD, AclOperation,
                                PatternType, PermissionType, ResourceType, parse_name, pascal)
from protocol.errors import ErrorCode, KafkaError
from protocol.spec import api




def parse_operation(text: str) -> AclOperation:
    """SecurityUtils.operation: "Read", "READ", "DescribeConfigs", "describe_configs";
    UNKNOWN when nothing matches."""
    return parse_name(AclOperation, text)


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, order=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None            # None: any name
    pattern_type: PatternType   # LITERAL, PREFIXED, ANY or MATCH

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission.name})")


@dataclass(frozen=True)
class EntryFilter:
    """None matches any principal / host; ANY any operation / permission."""
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    @classmethod
    def of(cls, e: AccessControlEntry) -> EntryFilter:
        return cls(e.principal, e.host, e.operation, e.permission)


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: EntryFilter = EntryFilter()


ANY_FILTER = AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY))


# ---- the verbs, on one connection ----------------------------------------------------------

def _version(conn: KafkaConnection, api_key: int, pattern_types: list[PatternType]) -> int:
    """v1+ carry pattern types; v0 only literal patterns (ANY filters become LITERAL)."""
    version = conn.version_for(api_key)
    if version == 0 and any(p not in (PatternType.LITERAL, PatternType.ANY)
                            for p in pattern_types):
        raise NoCommonVersion(f"{conn.host}:{conn.port} speaks {api(api_key).name} v0 only: "
                              "no prefixed or match patterns", conn.host, conn.port,
                              api_key=api_key)
    return version


def _binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str,
             operation: int, permission: int) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType(resource_type), name, PatternType(pattern_type)),
                      AccessControlEntry(principal, host, AclOperation(operation),
                                         PermissionType(permission)))


async def describe_acls(conn: KafkaConnection, f: AclBindingFilter) -> list[AclBinding]:
    """The bindings ``f`` matches; KafkaError on an error answer."""
    version = _version(conn, ApiKey.DESCRIBE_ACLS, [f.pattern.pattern_type])
    body = api(ApiKey.DESCRIBE_ACLS).request.new(
        resource_type_filter=int(f.pattern.resource_type), resource_name_filter=f.pattern.name,
        pattern_type_filter=int(f.pattern.pattern_type), principal_filter=f.entry.principal,
        host_filter=f.entry.host, operation=int(f.entry.operation),
        permission_type=int(f.entry.permission))
    resp = await conn.request(ApiKey.DESCRIBE_ACLS, body, version)
    assert resp is not None
    if resp.error_code != ErrorCode.NONE:
        raise KafkaError(resp.error_code, resp.error_message)
    return [_binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host,
                     a.operation, a.permission_type)
            for r in resp.resources for a in r.acls]


async def create_acls(conn: KafkaConnection, bindings: list[AclBinding]
                      ) -> list[tuple[int, str | None]]:
    """Per binding (error code, message)."""
    spec = api(ApiKey.CREATE_ACLS).request
    version = _version(conn, ApiKey.CREATE_ACLS, [b.pattern.pattern_type for b in bindings])
    body = spec.new(creations=[spec.structs["AclCreation"].new(
        resource_type=int(b.pattern.resource_type), resource_name=b.pattern.name,
        resource_pattern_type=int(b.pattern.pattern_type), principal=b.entry.principal,
        host=b.entry.host, operation=int(b.entry.operation),
        permission_type=int(b.entry.permission)) for b in bindings])
    resp = await conn.request(ApiKey.CREATE_ACLS, body, version)
    assert resp is not None
    return [(int(r.error_code), r.error_message) for r in resp.results]


Deleted = tuple[AclBinding, int, str | None]   # (binding, error code, message)


async def delete_acls(conn: KafkaConnection, filters: list[AclBindingFilter]
                      ) -> list[tuple[int, str | None, list[Deleted]]]:
    """Per filter (error code, message, the bindings it deleted with their errors)."""
    spec = api(ApiKey.DELETE_ACLS).request
    version = _version(conn, ApiKey.DELETE_ACLS, [f.pattern.pattern_type for f in filters])
    body = spec.new(filters=[spec.structs["DeleteAclsFilter"].new(
        resource_type_filter=int(f.pattern.resource_type), resource_name_filter=f.pattern.name,
        pattern_type_filter=int(f.pattern.pattern_type), principal_filter=f.entry.principal,
        host_filter=f.entry.host, operation=int(f.entry.operation),
        permission_type=int(f.entry.permission)) for f in filters])
    resp = await conn.request(ApiKey.DELETE_ACLS, body, version)
    assert resp is not None
    return [(int(r.error_code), r.error_message, [
        (_binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                  m.operation, m.permission_type), int(m.error_code), m.error_message)
        for m in r.matching_acls]) for r in resp.filter_results]


def _raise_first(errors: list[tuple[int, str | None]], what: str) -> None:
    for code, message in errors:
        if code != ErrorCode.NONE:
            err = ErrorCode.from_code(code)
            raise KafkaError(code, f"{what}: {err.name}" + (f": {message}" if message else ""))


class AclAdmin:
    """The verbs over ``admin``'s connections; errors raise KafkaError, as Kafka's
    Admin ``all().get()`` throws."""

    def __init__(self, admin: KafkaAdmin) -> None:
        self.admin = admin

    async def describe(self, f: AclBindingFilter = ANY_FILTER) -> list[AclBinding]:
        return await describe_acls(await self.admin.any_connection(), f)

    async def create(self, bindings: list[AclBinding]) -> None:
        if bindings:
            errors = await create_acls(await self.admin.any_connection(), bindings)
            _raise_first(errors, "CreateAcls")

    async def delete(self, filters: list[AclBindingFilter]) -> list[AclBinding]:
        """Delete what ``filters`` match; -> the bindings deleted."""
        if not filters:
            return []
        results = await delete_acls(await self.admin.any_connection(), filters)
        _raise_first([(code, message) for code, message, _ in results], "DeleteAcls")
        _raise_first([(code, message) for _, _, deleted in results for _, code, message in deleted],
                     "DeleteAcls")
        return [b for _, _, deleted in results for b, _, _ in deleted]


__all__ = ["ANY_FILTER", "CLUSTER_NAME", "SUPPORTED_OPERATIONS", "WILDCARD", "AccessControlEntry",
           "AclAdmin", "AclBinding", "AclBindingFilter", "AclOperation", "EntryFilter",
           "PatternType", "PermissionType", "ResourcePattern", "ResourcePatternFilter",
           "ResourceType", "create_acls", "delete_acls", "describe_acls", "parse_operation",
           "pascal"]
