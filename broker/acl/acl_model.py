"""ACL vocabulary as Kafka's (org.apache.kafka.common.acl / .resource) and the
ZooKeeper layout of Kafka's ZooKeeper-mode AclAuthorizer (kafka.zk.ZkData).

Wire codes (int8 in DescribeAcls / CreateAcls / DeleteAcls):

    ResourceType   0 UNKNOWN 1 ANY 2 TOPIC 3 GROUP 4 CLUSTER 5 TRANSACTIONAL_ID
                   6 DELEGATION_TOKEN 7 USER
    AclOperation   0 UNKNOWN 1 ANY 2 ALL 3 READ 4 WRITE 5 CREATE 6 DELETE 7 ALTER
                   8 DESCRIBE 9 CLUSTER_ACTION 10 DESCRIBE_CONFIGS 11 ALTER_CONFIGS
                   12 IDEMPOTENT_WRITE 13 CREATE_TOKENS 14 DESCRIBE_TOKENS
    PermissionType 0 UNKNOWN 1 ANY 2 DENY 3 ALLOW
    PatternType    0 UNKNOWN 1 ANY 2 MATCH 3 LITERAL 4 PREFIXED

ANY and MATCH exist only in filters; a stored binding is always concrete.

ZooKeeper (names in PascalCase, as SecurityUtils.resourceTypeName):

    /kafka-acl/<ResourceType>/<name>                    LITERAL patterns
    /kafka-acl-extended/prefixed/<ResourceType>/<name>  PREFIXED patterns
      data: {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                                  "operation":"Read","host":"*"}, ...]}
    /kafka-acl-changes/acl_changes_<10-digit seq>           data "TOPIC:<name>"
    /kafka-acl-extended-changes/acl_changes_<10-digit seq>  data
      {"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}

A resource znode with no ACLs left is deleted. Every write is followed by a
change notification that makes every broker re-read that one resource.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# the wire codes, shared with client/acl_admin.py
from protocol.acl_types import (CLUSTER_NAME, WILDCARD, AclOperation, PatternType,  # noqa: F401
                                PermissionType, ResourceType, parse_name, pascal)


WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"         # the principal of every PLAINTEXT connection

def parse_principal(text: str) -> str:
    """'type:name' (SecurityUtils.parseKafkaPrincipal); raises ValueError otherwise."""
    if not text or ":" not in text:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return text


# ---- bindings and filters ----------------------------------------------------------------

@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str            # "User:alice", "User:*"
    host: str                 # an IP address or "*"
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def invalid_reason(self) -> str | None:
        """Why Kafka would refuse to store this binding, or None."""
        p, e = self.pattern, self.entry
        if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resource type {p.resource_type.name}"
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid pattern type {p.pattern_type.name}"
        if e.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {e.operation.name}"
        if e.permission in (PermissionType.UNKNOWN, PermissionType.ANY):
            return f"Invalid permission type {e.permission.name}"
        if "/" in p.name:
            return f"ACL binding contains invalid resource name: {p.name}"
        try:
            parse_principal(e.principal)
        except ValueError as err:
            return str(err)
        return None


@dataclass(frozen=True)
class PatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, p: ResourcePattern) -> bool:
        """ResourcePatternFilter.matches: ANY takes every pattern type with an
        exact name; MATCH takes the literal name, the literal wildcard and every
        prefix of the name."""
        if self.resource_type not in (ResourceType.ANY, p.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, p.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, p.pattern_type):
            return self.name == p.name
        if p.pattern_type == PatternType.LITERAL:
            return self.name == p.name or p.name == WILDCARD
        return self.name.startswith(p.name)

    def matches_at_most_one(self) -> bool:
        return (self.name is not None
                and self.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN)
                and self.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED))


@dataclass(frozen=True)
class EntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: PermissionType

    def matches(self, e: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == e.principal)
                and (self.host is None or self.host == e.host)
                and self.operation in (AclOperation.ANY, e.operation)
                and self.permission in (PermissionType.ANY, e.permission))


@dataclass(frozen=True)
class AclBindingFilter:
    pattern: PatternFilter
    entry: EntryFilter

    def matches(self, b: AclBinding) -> bool:
        return self.pattern.matches(b.pattern) and self.entry.matches(b.entry)

    def has_unknown(self) -> bool:
        return 0 in (self.pattern.resource_type, self.pattern.pattern_type,
                     self.entry.operation, self.entry.permission)


# ---- ZooKeeper paths and JSON -------------------------------------------------------------

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended"
PREFIXED_ROOT = f"{EXTENDED_ROOT}/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ACL_PATHS = (LITERAL_ROOT, PREFIXED_ROOT, LITERAL_CHANGES, EXTENDED_CHANGES)
STORE_ROOTS = {PatternType.LITERAL: LITERAL_ROOT, PatternType.PREFIXED: PREFIXED_ROOT}


def resource_path(p: ResourcePattern) -> str:
    return f"{STORE_ROOTS[p.pattern_type]}/{pascal(p.resource_type)}/{p.name}"


def changes_path(pattern_type: PatternType) -> str:
    return LITERAL_CHANGES if pattern_type == PatternType.LITERAL else EXTENDED_CHANGES


def encode_acls(entries: frozenset[AccessControlEntry]) -> bytes:
    acls = [{"principal": e.principal, "permissionType": pascal(e.permission),
             "operation": pascal(e.operation), "host": e.host} for e in sorted(entries)]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """AclEntry.fromBytes: empty data is no ACLs; version must be 1."""
    if not data:
        return frozenset()
    js = json.loads(data)
    if js.get("version") != 1:
        raise ValueError(f"unsupported ACL znode version {js.get('version')}")
    return frozenset(
        AccessControlEntry(parse_principal(a["principal"]), a["host"],
                           parse_name(AclOperation, a["operation"]),
                           parse_name(PermissionType, a["permissionType"]))
        for a in js["acls"])


def encode_change(p: ResourcePattern) -> bytes:
    if p.pattern_type == PatternType.LITERAL:
        return f"{p.resource_type.name}:{p.name}".encode()
    return json.dumps({"version": 1, "resourceType": p.resource_type.name, "name": p.name,
                       "patternType": p.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(pattern_root: str, data: bytes) -> ResourcePattern:
    """A change notification's resource (raises ValueError when malformed)."""
    text = data.decode()
    if pattern_root == LITERAL_CHANGES:
        rtype, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName but got {text}")
        return _concrete(ResourcePattern(parse_name(ResourceType, rtype), name,
                                         PatternType.LITERAL))
    js = json.loads(text)
    if js.get("version", 1) > 1:
        raise ValueError(f"unsupported ACL change event version {js['version']}")
    return _concrete(ResourcePattern(parse_name(ResourceType, js["resourceType"]), js["name"],
                                     parse_name(PatternType, js["patternType"])))


def _concrete(p: ResourcePattern) -> ResourcePattern:
    if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY) \
            or p.pattern_type not in STORE_ROOTS:
        raise ValueError(f"not a concrete resource pattern: {p}")
    return p
