"""The ACL vocabulary of the Kafka protocol: the int8 codes DescribeAcls,
CreateAcls and DeleteAcls carry (Kafka's ResourceType, AclOperation,
AclPermissionType and PatternType), shared by the broker's authorizer and the
client's ACL admin verbs."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


CLUSTER_NAME = "kafka-cluster"       # the only name of the CLUSTER resource
WILDCARD = "*"                       # the wildcard resource name and host

# Operations a resource type supports (AclEntry.supportedOperations).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
}

E = TypeVar("E", bound=IntEnum)


def pascal(member: IntEnum) -> str:
    """SecurityUtils.toPascalCase: TRANSACTIONAL_ID -> TransactionalId."""
    return "".join(w.capitalize() for w in member.name.split("_"))


def parse_name(cls: type[E], text: str) -> E:
    """Kafka's case-insensitive lookup by PascalCase name ("Read", "READ",
    "DescribeConfigs", "DESCRIBE_CONFIGS"); UNKNOWN (code 0) when nothing matches."""
    wanted = text.strip().replace("_", "").upper()
    for member in cls:
        if member.name.replace("_", "") == wanted:
            return member
    return cls(0)
