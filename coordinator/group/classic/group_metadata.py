"""A classic group's members, generation, protocols and assignments (Kafka's
GroupMetadata / MemberMetadata; its committed offsets are keyed by group id in
coordinator/group/committed_offsets.py). Pure: the asyncio glue lives in
``group_coordinator``; here a waiting JoinGroup or SyncGroup is only a callback.

Invariants:
* ``num_awaiting_join`` == number of members with a join callback;
* ``supported_protocols[name]`` == number of members offering ``name``;
* ``static_members`` maps group.instance.id -> the member id currently holding it;
* the leader is a member (or None when there are none);
* state changes only through ``transition_to`` (checked against group_state's table).
"""

from __future__ import annotations

import struct
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.group.classic.group_state import GroupState, can_rebalance, check_transition
from coordinator.group.classic.offsets_topic import OffsetAndMetadata, StoredGroup, StoredMember
from protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"
GROUP_TYPE_CLASSIC = "classic"

Protocols = list[tuple[str, bytes]]      # (name, metadata) in the member's preference order
TopicPartition = tuple[str, int]


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    is_new: bool = False
    heartbeat_satisfied: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols (its preference order) among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {candidates}")

    def has_satisfied_heartbeat(self) -> bool:
        """New members can expire while awaiting join; others waiting in a
        rebalance need no heartbeat; otherwise the next heartbeat is required."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join is not None or self.awaiting_sync is not None:
            return True
        return self.heartbeat_satisfied


class GroupMetadata:
    def __init__(self, group_id: str, state: GroupState, now_ms: int) -> None:
        self.group_id = group_id
        self.state = state
        self.current_state_timestamp: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.supported_protocols: Counter[str] = Counter()
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None

    def __repr__(self) -> str:
        return (f"GroupMetadata({self.group_id!r}, {self.state}, generation={self.generation_id}, "
                f"members={list(self.members)})")

    # -- state ---------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.current_state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return can_rebalance(self.state)

    # -- members -------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in "
                                   f"group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        member.awaiting_join = callback
        if callback is not None:
            self.num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.protocols)
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: MemberMetadata, protocols: Protocols,
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      callback: JoinCallback | None) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        member.protocols = protocols
        self.supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and member.awaiting_join is None:
            self.num_awaiting_join += 1
        elif callback is None and member.awaiting_join is not None:
            self.num_awaiting_join -= 1
        member.awaiting_join = callback

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """Move a static member to a new member id; whatever the old id was
        waiting for (join or sync) is answered FENCED_INSTANCE_ID at once."""
        member = self.members.pop(old_id)
        self.maybe_invoke_join(member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
        self.maybe_invoke_sync(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member

    def maybe_invoke_join(self, member: MemberMetadata, result: JoinResult) -> bool:
        callback = member.awaiting_join
        if callback is None:
            return False
        member.awaiting_join = None
        self.num_awaiting_join -= 1
        callback(result)
        return True

    def maybe_invoke_sync(self, member: MemberMetadata, result: SyncResult) -> bool:
        callback = member.awaiting_sync
        if callback is None:
            return False
        member.awaiting_sync = None
        callback(result)
        return True

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False when
        there is no leader or nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join is not None:
                self.leader_id = member_id
                return True
        return False

    # -- protocols -----------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n and n}

    def select_protocol(self) -> str:
        """The protocol every member supports with the most first-choice votes
        (ties: the first to reach the maximum in member order)."""
        if not self.members:
            raise RuntimeError("cannot select a protocol for an empty group")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols[p] == n for p in protocols))

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the consumer-protocol members subscribe to; None when unknown
        (another protocol type, or metadata that does not parse)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(parse_subscription_topics(m.metadata(self.protocol_name)))
        except (ValueError, KeyError, struct.error, UnicodeDecodeError):
            return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    # -- offset retention ----------------------------------------------------------------

    def retention_rule(self) -> tuple[Callable[[OffsetAndMetadata], int], set[str]] | None:
        """How this group's committed offsets expire (Kafka's removeExpiredOffsets,
        KIP-211): (when an offset's retention starts, topics whose offsets never
        expire), or None when none expire now:
        * Empty group with a protocol type: retention runs from when it became
          Empty (else from each commit);
        * Stable consumer group that knows its subscriptions: unsubscribed
          topics' offsets expire from their commit time;
        * no protocol type (standalone commits): from each commit."""
        if self.protocol_type is not None and self.is_(GroupState.EMPTY):
            emptied = self.current_state_timestamp
            return ((lambda o: o.commit_timestamp) if emptied is None
                    else (lambda o: emptied)), set()
        if (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None
                and self.is_(GroupState.STABLE)):
            return (lambda o: o.commit_timestamp), set(self.subscribed_topics)
        if self.protocol_type is None:
            return (lambda o: o.commit_timestamp), set()
        return None

    # -- summaries and records -----------------------------------------------------------

    def summary(self) -> tuple[str, str, str, list[tuple[MemberMetadata, bytes, bytes]]]:
        """DescribeGroups: (state, protocol type, protocol, [(member, metadata, assignment)]);
        metadata and assignment only for a Stable group."""
        if self.is_(GroupState.STABLE):
            assert self.protocol_name is not None
            return (str(self.state), self.protocol_type or "", self.protocol_name,
                    [(m, m.metadata(self.protocol_name), m.assignment)
                     for m in self.members.values()])
        return (str(self.state), self.protocol_type or "", "",
                [(m, b"", b"") for m in self.members.values()])

    def to_stored(self, assignment: dict[str, bytes]) -> StoredGroup:
        """The GroupMetadataValue for this generation with ``assignment``."""
        members = tuple(StoredMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(self.protocol_name) if self.protocol_name else b"",
            assignment=assignment.get(m.member_id, b"")) for m in self.members.values())
        return StoredGroup(protocol_type=self.protocol_type or "", generation=self.generation_id,
                           protocol=self.protocol_name, leader=self.leader_id,
                           current_state_timestamp=(self.current_state_timestamp
                                                    if self.current_state_timestamp is not None
                                                    else -1),
                           members=members)

    @classmethod
    def from_stored(cls, group_id: str, stored: StoredGroup, now_ms: int) -> GroupMetadata:
        """Kafka's GroupMetadata.loadGroup: Empty without members, else Stable."""
        state = GroupState.STABLE if stored.members else GroupState.EMPTY
        g = cls(group_id, state, now_ms)
        g.generation_id = stored.generation
        g.protocol_type = stored.protocol_type or None
        g.protocol_name = stored.protocol
        g.leader_id = stored.leader
        g.current_state_timestamp = (stored.current_state_timestamp
                                     if stored.current_state_timestamp >= 0 else None)
        for sm in stored.members:
            protocols: Protocols = [(stored.protocol or "", sm.subscription)]
            member = MemberMetadata(sm.member_id, sm.group_instance_id, sm.client_id,
                                    sm.client_host, sm.rebalance_timeout, sm.session_timeout,
                                    stored.protocol_type, protocols, assignment=sm.assignment)
            g.add(member)
        g.leader_id = stored.leader if stored.leader in g.members else g.leader_id
        g.subscribed_topics = g.compute_subscribed_topics()
        return g


def parse_subscription_topics(data: bytes) -> list[str]:
    """The topics of a ConsumerProtocolSubscription, read with its v0 prefix that
    every version shares: int16 version | int32 count | count x (int16 len | utf-8)."""
    view = memoryview(data)
    if len(view) < 6:
        raise ValueError("subscription too short")
    (count,) = struct.unpack_from(">i", view, 2)
    if count < 0:
        raise ValueError("negative topic count")
    at, topics = 6, []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", view, at)
        if n < 0 or at + 2 + n > len(view):
            raise ValueError("bad topic name")
        topics.append(bytes(view[at + 2:at + 2 + n]).decode("utf-8"))
        at += 2 + n
    return topics
