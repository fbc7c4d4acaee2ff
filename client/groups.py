"""The consumer-group verbs, written once: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup (a member's side) and OffsetCommit, OffsetFetch,
OffsetDelete, ListGroups, DescribeGroups, DeleteGroups (what a consumer commits
and an admin reads).

As in ``verbs.py``, each takes an open ``KafkaConnection`` (the caller finds
the coordinator, with ``find_coordinator`` on any broker), builds the request
at the highest version both sides speak, and returns plain results; error codes
are returned, never raised. ``group_admin.py`` routes them to coordinators with
retries for the tools.

Version notes the verbs hide:
* FindCoordinator v4+ batches keys (CoordinatorKeys, one Coordinators entry each).
* JoinGroup v4+ answers MEMBER_ID_REQUIRED to a new member, with its id: join
  again with it (KIP-394). The caller loops; the verb returns the answer.
* LeaveGroup v3+ names members in a list; v0-2 one member id.
* OffsetCommit v1 carries a per-partition timestamp and v2-4 a retention time
  (both left at -1: the broker's defaults); v6+ the leader epoch.
* OffsetFetch v8+ moves the group under Groups (KIP-709): one layout per side
  of v8, both read here. A null partition list asks for every partition (v2+).
* ListGroups v4+ filters by state and reports it; below v4 the state is "".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from client.connection import KafkaConnection
from client.verbs import TP, _by_topic, partitions_by_topic
from protocol.api_keys import ApiKey
from protocol.spec import api

GROUP_KEY, TRANSACTION_KEY = 0, 1       # FindCoordinator KeyType
NO_GENERATION = -1                      # a standalone commit (no member)


# -- FindCoordinator ------------------------------------------------------------------


@dataclass(frozen=True)
class Coordinator:
    error: int
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


async def find_coordinator(conn: KafkaConnection, key: str, *,
                           key_type: int = GROUP_KEY) -> Coordinator:
    """The coordinator of a group (or, ``TRANSACTION_KEY``, a transactional id)."""
    version = conn.version_for(ApiKey.FIND_COORDINATOR)
    spec = api(ApiKey.FIND_COORDINATOR).request
    resp = await conn.request(ApiKey.FIND_COORDINATOR, spec.new(
        key=key, key_type=key_type, coordinator_keys=[key]), version)
    assert resp is not None
    c = resp.coordinators[0] if version >= 4 else resp
    return Coordinator(c.error_code, c.node_id, c.host, c.port,
                       c.error_message if version >= 1 else None)


# -- a member's side: JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---------------------


@dataclass(frozen=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: int
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()   # only the leader gets them

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader == self.member_id


async def join_group(conn: KafkaConnection, group: str, *, member_id: str,
                     protocol_type: str, protocols: Iterable[tuple[str, bytes]],
                     session_timeout_ms: int, rebalance_timeout_ms: int,
                     group_instance_id: str | None = None,
                     reason: str | None = None) -> JoinResult:
    """Join (or rejoin) ``group`` offering ``protocols`` [(name, metadata)] in
    preference order. MEMBER_ID_REQUIRED comes back with the id to join with."""
    spec = api(ApiKey.JOIN_GROUP).request
    proto = spec.structs["JoinGroupRequestProtocol"]
    resp = await conn.request(ApiKey.JOIN_GROUP, spec.new(
        group_id=group, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id,
        group_instance_id=group_instance_id, protocol_type=protocol_type,
        protocols=[proto.new(name=n, metadata=m) for n, m in protocols], reason=reason))
    assert resp is not None
    return JoinResult(resp.error_code, resp.generation_id, resp.protocol_name, resp.leader,
                      resp.member_id,
                      tuple(JoinedMember(m.member_id, m.group_instance_id, bytes(m.metadata))
                            for m in resp.members))


async def sync_group(conn: KafkaConnection, group: str, *, generation_id: int,
                     member_id: str, assignments: Mapping[str, bytes] | None = None,
                     protocol_type: str | None = None, protocol_name: str | None = None,
                     group_instance_id: str | None = None) -> tuple[int, bytes]:
    """SyncGroup; the leader passes every member's assignment, the others none.
    -> (error, this member's assignment bytes)."""
    spec = api(ApiKey.SYNC_GROUP).request
    sa = spec.structs["SyncGroupRequestAssignment"]
    resp = await conn.request(ApiKey.SYNC_GROUP, spec.new(
        group_id=group, generation_id=generation_id, member_id=member_id,
        group_instance_id=group_instance_id, protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=[sa.new(member_id=m, assignment=a) for m, a in (assignments or {}).items()]))
    assert resp is not None
    return resp.error_code, bytes(resp.assignment)


async def heartbeat(conn: KafkaConnection, group: str, *, generation_id: int, member_id: str,
                    group_instance_id: str | None = None) -> int:
    """-> the error (REBALANCE_IN_PROGRESS: rejoin)."""
    spec = api(ApiKey.HEARTBEAT).request
    resp = await conn.request(ApiKey.HEARTBEAT, spec.new(
        group_id=group, generation_id=generation_id, member_id=member_id,
        group_instance_id=group_instance_id))
    assert resp is not None
    return int(resp.error_code)


async def leave_group(conn: KafkaConnection, group: str, member_id: str, *,
                      group_instance_id: str | None = None,
                      reason: str | None = None) -> int:
    """One member leaves; -> the error (the member's own from v3)."""
    version = conn.version_for(ApiKey.LEAVE_GROUP)
    spec = api(ApiKey.LEAVE_GROUP).request
    who = spec.structs["MemberIdentity"].new(member_id=member_id,
                                             group_instance_id=group_instance_id, reason=reason)
    resp = await conn.request(ApiKey.LEAVE_GROUP, spec.new(
        group_id=group, member_id=member_id, members=[who]), version)
    assert resp is not None
    if resp.error_code or version < 3 or not resp.members:
        return int(resp.error_code)
    return int(resp.members[0].error_code)


# -- offsets: OffsetCommit, OffsetFetch, OffsetDelete ----------------------------------


async def offset_commit(conn: KafkaConnection, group: str, offsets: Mapping[TP, int], *,
                        generation_id: int = NO_GENERATION, member_id: str = "",
                        group_instance_id: str | None = None,
                        leader_epochs: Mapping[TP, int] | None = None,
                        metadata: str = "") -> dict[TP, int]:
    """Commit ``offsets`` (the next offset to read) for ``group``; by default a
    standalone commit (no generation, no member), as the tools and Kafka's
    admin client do. -> per-partition errors."""
    spec = api(ApiKey.OFFSET_COMMIT).request
    s = spec.structs
    epochs = leader_epochs or {}
    body = spec.new(
        group_id=group, generation_id_or_member_epoch=generation_id, member_id=member_id,
        group_instance_id=group_instance_id, retention_time_ms=-1,
        topics=[s["OffsetCommitRequestTopic"].new(name=topic, partitions=[
            s["OffsetCommitRequestPartition"].new(
                partition_index=p, committed_offset=o,
                committed_leader_epoch=epochs.get((topic, p), -1), commit_timestamp=-1,
                committed_metadata=metadata) for p, o in parts])
            for topic, parts in _by_topic(offsets.items()).items()])
    resp = await conn.request(ApiKey.OFFSET_COMMIT, body)
    assert resp is not None
    return {(t.name, p.partition_index): int(p.error_code)
            for t in resp.topics for p in t.partitions}


@dataclass(frozen=True)
class CommittedOffset:
    error: int
    offset: int = -1                 # -1: nothing committed
    leader_epoch: int = -1
    metadata: str | None = None


@dataclass(frozen=True)
class FetchedOffsets:
    error: int                       # group level (v2+)
    partitions: dict[TP, CommittedOffset] = field(default_factory=dict)


async def offset_fetch(conn: KafkaConnection, group: str,
                       partitions: Iterable[TP] | None = None, *,
                       require_stable: bool = False,
                       max_version: int | None = None) -> FetchedOffsets:
    """The committed offsets of ``partitions`` (None: every partition the group
    has committed, v2+). Partitions without a commit come back with offset -1."""
    version = conn.version_for(ApiKey.OFFSET_FETCH, max_version)
    spec = api(ApiKey.OFFSET_FETCH).request
    s = spec.structs
    wanted = None if partitions is None else partitions_by_topic(partitions)
    if version >= 8:
        topics = None if wanted is None else [
            s["OffsetFetchRequestTopics"].new(name=t, partition_indexes=ps)
            for t, ps in wanted.items()]
        body = spec.new(require_stable=require_stable, groups=[s["OffsetFetchRequestGroup"].new(
            group_id=group, member_id=None, member_epoch=-1, topics=topics)])
    else:
        body = spec.new(group_id=group, require_stable=require_stable, topics=None
                        if wanted is None else [
                            s["OffsetFetchRequestTopic"].new(name=t, partition_indexes=ps)
                            for t, ps in wanted.items()])
    resp = await conn.request(ApiKey.OFFSET_FETCH, body, version)
    assert resp is not None
    if version >= 8:
        g = resp.groups[0]
        error, topics_out = g.error_code, g.topics
    else:
        error, topics_out = (resp.error_code if version >= 2 else 0), resp.topics
    return FetchedOffsets(int(error), {
        (t.name, p.partition_index): CommittedOffset(
            int(p.error_code), int(p.committed_offset),
            int(p.committed_leader_epoch) if version >= 5 else -1, p.metadata)
        for t in topics_out for p in t.partitions})


async def offset_delete(conn: KafkaConnection, group: str, partitions: Iterable[TP]
                        ) -> tuple[int, dict[TP, int]]:
    """Delete the group's committed offsets of ``partitions`` (refused per
    partition while the group subscribes to its topic). -> (group error, per-partition)."""
    spec = api(ApiKey.OFFSET_DELETE).request
    s = spec.structs
    body = spec.new(group_id=group, topics=[
        s["OffsetDeleteRequestTopic"].new(name=t, partitions=[
            s["OffsetDeleteRequestPartition"].new(partition_index=p) for p in ps])
        for t, ps in partitions_by_topic(sorted(partitions)).items()])
    resp = await conn.request(ApiKey.OFFSET_DELETE, body)
    assert resp is not None
    return int(resp.error_code), {(t.name, p.partition_index): int(p.error_code)
                                  for t in resp.topics for p in t.partitions}


# -- admin: ListGroups, DescribeGroups, DeleteGroups -----------------------------------


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str = ""                  # "" below v4
    group_type: str = ""             # "classic" / "consumer" (KIP-848); "" below v5

    @property
    def type_name(self) -> str:
        """As Kafka's tool prints GroupType: "Classic", "Consumer" ("Unknown" if none)."""
        return self.group_type.capitalize() if self.group_type else "Unknown"


async def list_groups(conn: KafkaConnection, states: Iterable[str] = (),
                      types: Iterable[str] = ()) -> tuple[int, list[ListedGroup]]:
    """The groups this broker coordinates, filtered by state (v4+) and by type (v5+);
    a broker too old for a filter is not asked to (the caller filters).
    -> (error, groups)."""
    version = conn.version_for(ApiKey.LIST_GROUPS)
    spec = api(ApiKey.LIST_GROUPS).request
    resp = await conn.request(ApiKey.LIST_GROUPS, spec.new(
        states_filter=sorted(states) if version >= 4 else [],
        types_filter=sorted(types) if version >= 5 else []), version)
    assert resp is not None
    return int(resp.error_code), [
        ListedGroup(g.group_id, g.protocol_type, g.group_state if version >= 4 else "",
                    g.group_type.lower() if version >= 5 else "")
        for g in resp.groups]


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True)
class DescribedGroup:
    error: int
    group_id: str
    state: str = ""                  # "Stable", "Empty", "Dead", ...
    protocol_type: str = ""
    protocol: str = ""               # the chosen assignor
    members: tuple[GroupMember, ...] = ()


async def describe_groups(conn: KafkaConnection, groups: Iterable[str]
                          ) -> list[DescribedGroup]:
    """State, protocol and members of each group, at its coordinator."""
    spec = api(ApiKey.DESCRIBE_GROUPS).request
    resp = await conn.request(ApiKey.DESCRIBE_GROUPS, spec.new(
        groups=list(groups), include_authorized_operations=False))
    assert resp is not None
    return [DescribedGroup(
        int(g.error_code), g.group_id, g.group_state, g.protocol_type, g.protocol_data,
        tuple(GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                          bytes(m.member_metadata), bytes(m.member_assignment))
              for m in g.members))
        for g in resp.groups]


async def delete_groups(conn: KafkaConnection, groups: Iterable[str]) -> dict[str, int]:
    """Delete (empty) groups at their coordinator; -> per-group errors."""
    spec = api(ApiKey.DELETE_GROUPS).request
    resp = await conn.request(ApiKey.DELETE_GROUPS, spec.new(groups_names=list(groups)))
    assert resp is not None
    return {r.group_id: int(r.error_code) for r in resp.results}


__all__ = [
    "GROUP_KEY", "NO_GENERATION", "TRANSACTION_KEY", "CommittedOffset", "Coordinator",
    "DescribedGroup", "FetchedOffsets", "GroupMember", "JoinResult", "JoinedMember",
    "ListedGroup", "delete_groups", "describe_groups", "find_coordinator", "heartbeat",
    "join_group", "leave_group", "list_groups", "offset_commit", "offset_delete",
    "offset_fetch", "sync_group",
]
