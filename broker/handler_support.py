"""Helpers several handlers share, so that no handler module imports another:
leader hints for NOT_LEADER_OR_FOLLOWER answers (KIP-951), the cluster id and
controller id, Kafka's authorized-operations bitfields, ACL filter structs and
the metadata-cache lookups of the group APIs.

The topic-creation core is ``broker.topic_creation``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.acl.acl_model import (AclBindingFilter, AclOperation, EntryFilter, PatternFilter,
                                  PatternType, PermissionType, ResourceType)
from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.schema import Struct

if TYPE_CHECKING:
    from broker.metadata_cache import MetadataCache

# ---- leader hints (Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch) ------

LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def leader_hint(ctx: RequestContext, topic: str, partition: int) -> tuple[int, int] | None:
    """(leader id, leader epoch) of a partition from the metadata cache, None if unknown."""
    try:
        for meta in ctx.broker.metadata.partitions(topic):
            if meta.partition == partition:
                return meta.leader, meta.leader_epoch
    except (KeyError, LookupError):
        return None
    return None


def node_endpoints(ctx: RequestContext, leader_ids: set[int], node_spec: Any) -> list[Struct]:
    """NodeEndpoint structs for the leaders named in CurrentLeader fields (KIP-951)."""
    out = []
    for broker_id in sorted(leader_ids):
        b = ctx.broker.metadata.broker_on(broker_id, ctx.connection.listener)
        if b is not None:
            out.append(node_spec.new(node_id=b.id, host=b.host, port=b.port, rack=b.rack))
    return out


def refine_unknown(ctx: RequestContext, topic: str, partition: int, error: int) -> int:
    """Not hosted here: NOT_LEADER_OR_FOLLOWER if the cluster knows the partition."""
    if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and leader_hint(ctx, topic, partition) is not None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return error


# ---- cluster identity and authorized operations (Metadata, DescribeCluster) --------------

OPERATIONS_NOT_REQUESTED = -2147483648   # Integer.MIN_VALUE: the schema default


def _bits(*ops: int) -> int:
    """AclOperation codes -> Kafka's 32-bit authorized-operations field."""
    out = 0
    for op in ops:
        out |= 1 << op
    return out


# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = _bits(3, 4, 5, 6, 7, 8, 10, 11)          # = 3576
CLUSTER_OPERATIONS = _bits(5, 7, 8, 9, 10, 11, 12)          # = 8096

def controller_id(metadata: MetadataCache) -> int:
    cid = metadata.controller_id
    return -1 if cid is None else int(cid)


# ---- ACL filters (DescribeAcls, DeleteAcls) ------------------------------------------------

def binding_filter(version: int, s: Struct) -> AclBindingFilter | None:
    """A DescribeAcls / DeleteAcls filter struct; None when it has an unknown
    element Kafka would refuse."""
    ptype = s.pattern_type_filter
    if version == 0 and ptype == PatternType.ANY:
        ptype = PatternType.LITERAL
    try:
        f = AclBindingFilter(
            PatternFilter(ResourceType(s.resource_type_filter), s.resource_name_filter,
                          PatternType(ptype)),
            EntryFilter(s.principal_filter, s.host_filter, AclOperation(s.operation),
                        PermissionType(s.permission_type)))
    except ValueError:
        return None
    return None if f.has_unknown() else f


# ---- metadata-cache lookups (OffsetCommit, OffsetDelete, the transactional APIs) ----------

def partition_exists(metadata: MetadataCache, topic: str, partition: int) -> bool:
    return metadata.partition(topic, partition) is not None
