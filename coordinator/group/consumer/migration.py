"""Online migration between a classic group and a consumer group (KIP-848's
``group.consumer.migration.policy``; Kafka 4.0's GroupMetadataManager
convertToConsumerGroup / convertToClassicGroup, ConsumerGroup.fromClassicGroup,
ClassicGroup.fromConsumerGroup).

The API (pure functions unless said otherwise; the asyncio glue in
consumer_group/coordinator.py calls them):

    MigrationPolicy.parse(text)            the config value (ValueError naming the key)
    can_upgrade(classic, policy, max_size) Kafka's validateOnlineUpgrade
    upgrade(classic, topics)  -> Conversion        classic -> consumer records
    complete_upgrade(classic_coordinator, group_id) -> GroupMetadata | None
                                           after the write: the classic side lets go
    can_downgrade(group, leaving_id, policy, classic_max_size)
                                           Kafka's validateOnlineDowngradeWithFencedMember
    can_downgrade_replacing(group, replaced_id, policy, classic_max_size)
                                           ... WithReplacedMemberId (a static classic join)
    downgrade(group, leaving_id, topics, now_ms) -> Conversion
                                           consumer -> classic records (+ the classic group)
    install_downgraded(classic_coordinator, conversion, rebalance=True)
                                           after the write: the classic side takes over

Upgrade (a ConsumerGroupHeartbeat with member epoch 0 for the id of a
non-empty classic group; an *empty* classic group is simply replaced, whatever
the policy, as Kafka does):
  1. ``can_upgrade``: the policy allows upgrades, the classic group's protocol
     type is "consumer", and it has at most group.consumer.max.size members;
     otherwise the heartbeat is answered GROUP_ID_NOT_FOUND (Kafka's "Group %s
     is not a consumer group").
  2. ``upgrade`` builds, in one batch's order: the classic GroupMetadata
     tombstone (key version 2, null value), then GroupEpoch (= the classic
     generation), per member MemberSubscription (topics and rack from its
     ConsumerProtocolSubscription, ``classic`` = its session timeout and every
     JoinGroup protocol), TargetAssignmentMember and TargetAssignmentEpoch
     (= the generation), CurrentAssignment (epoch = generation, STABLE, the
     partitions its classic assignment bytes name; topics that no longer exist
     are dropped). Malformed embedded metadata raises MigrationError
     (GROUP_ID_NOT_FOUND: the group stays classic). The glue then appends the
     joining member's heartbeat records (group_logic.heartbeat on the replayed
     group: it bumps the epoch, so every classic member is told to rejoin).
  3. After the batch is written, ``complete_upgrade`` answers the classic
     group's waiting JoinGroups/SyncGroups REBALANCE_IN_PROGRESS, stops its
     session timers and removes it from the group map (before the batch is
     replayed: one id names one group); it returns the removed GroupMetadata.
     The group's committed offsets are keyed by its id (committed_offsets.py),
     so a conversion never touches them. The converted members get consumer-group session timers with their classic
     session timeouts (``member.classic.session_timeout_ms``).

Downgrade (the last consumer-protocol member leaves or is fenced and every
other member speaks classic):
  1. ``can_downgrade``: the leaving member is the only non-classic one, some
     member stays, the policy allows downgrades, and the rest fit the classic
     group.max.size. Otherwise the member is removed the usual way.
  2. ``downgrade`` builds: the consumer group's tombstones (every member's
     CurrentAssignment, TargetAssignmentMember, then TargetAssignmentEpoch,
     every MemberSubscription, SubscriptionMetadata, RegexResolutions,
     GroupEpoch last), then the classic GroupMetadataValue (protocol type
     "consumer", generation = group epoch, the protocol every member supports
     with the most votes, leader = first member, each member's JoinGroup
     protocols and its *current* assigned partitions encoded as a
     ConsumerProtocolAssignment of the version its subscription uses).
     Kafka encodes the target assignment; the current one is what the members
     own (they got it in SyncGroup), and the rebalance that follows replaces
     it anyway. ``conversion.classic`` is that group, in memory, Stable.
     A classic static member that takes the instance id of the last
     consumer-protocol member (classic_glue's JoinGroup) downgrades too: the
     join's records (the old member replaced by the new id, which inherits its
     assignment), then ``downgrade(group as the join leaves it, None, ...)``
     in the same batch, and no rebalance (Kafka: the joining member takes the
     leaving one's place).
  3. After the batch is written and replayed (the consumer group leaves the
     group map), ``install_downgraded`` puts the classic group in the classic
     coordinator (its committed offsets stay keyed by its id), starts its members'
     session timers and begins a rebalance: every member's next Heartbeat is
     answered REBALANCE_IN_PROGRESS and it rejoins as a classic member.

``Conversion.key_values(encode)`` is the batch to write (acks=-1, one batch so
that a coordinator failover sees all of it or none): ``encode`` is
record_codec's Record -> (key, value); the classic records are already bytes.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from coordinator.group.consumer import records as r
from coordinator.group.consumer.model import Assignment, ClassicMemberMetadata, ConsumerGroup, \
    MemberState, TopicMeta
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.coordinator_types import join_key, member_key, sync_key
from coordinator.group.classic.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata, \
    JoinResult, MemberMetadata, SyncResult
from coordinator.group.classic.group_state import GroupState
from protocol.codec import DecodeError, decode_from, encode_prefixed, record_version
from protocol.errors import ErrorCode
from protocol.internal_topics import CONSUMER_ASSIGNMENT, CONSUMER_SUBSCRIPTION

if TYPE_CHECKING:
    from coordinator.group.classic.port import ClassicGroups

log = logging.getLogger(__name__)

POLICY_KEY = "group.consumer.migration.policy"
KeyValue = tuple[bytes, bytes | None]
TOPIC_PARTITION = CONSUMER_ASSIGNMENT.structs["TopicPartition"]
MAX_EMBEDDED_VERSION = 3      # ConsumerProtocolSubscription / Assignment: newer read as 3


class Topics(Protocol):
    """What a conversion needs of the topics (group_logic.TopicView has it)."""

    def by_name(self, name: str) -> TopicMeta | None: ...

    def names(self) -> Iterable[str]: ...


class MigrationPolicy(enum.Enum):
    """group.consumer.migration.policy (Kafka 4.0 default: bidirectional)."""
    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)

    @classmethod
    def parse(cls, text: str | MigrationPolicy) -> MigrationPolicy:
        """Case-insensitive; a bad value is a ValueError naming the key and the value
        (Kafka's parse quietly means disabled; a config check should not)."""
        if isinstance(text, MigrationPolicy):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise ValueError(f"{POLICY_KEY}={text!r}: use one of "
                             f"{', '.join(p.value for p in cls)}") from None


class MigrationError(Exception):
    """A conversion that cannot be done; ``error`` is the code to answer with."""

    def __init__(self, message: str, error: int = ErrorCode.GROUP_ID_NOT_FOUND) -> None:
        super().__init__(message)
        self.error = error


@dataclass
class Conversion:
    """One conversion's batch: ``records`` (consumer group records, typed) and
    ``classic_records`` (classic GroupMetadata key/values), in the order
    ``classic_first`` says; ``classic`` is the downgraded group in memory."""
    group_id: str
    records: list[r.Record] = field(default_factory=list)
    classic_records: list[KeyValue] = field(default_factory=list)
    classic_first: bool = True
    classic: GroupMetadata | None = None

    def key_values(self, encode: Callable[[r.Record], KeyValue]) -> list[KeyValue]:
        consumer = [encode(record) for record in self.records]
        return (self.classic_records + consumer if self.classic_first
                else consumer + self.classic_records)


# -- the embedded consumer protocol ------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Subscription:
    """A ConsumerProtocolSubscription, the fields a conversion uses."""
    version: int
    topics: tuple[str, ...]
    owned: dict[str, tuple[int, ...]]
    rack_id: str | None


def _embedded(spec: Any, data: bytes) -> tuple[int, Any]:
    """-> (version as written, struct read as min(version, 3)); trailing bytes of
    newer versions are ignored (Kafka reads a newer version as its highest)."""
    try:
        version = record_version(data)
        if version < 0:
            raise DecodeError(f"{spec.name}: negative version {version}")
        struct, _ = decode_from(spec, memoryview(data), 2, min(version, MAX_EMBEDDED_VERSION))
    except DecodeError as e:
        raise MigrationError(f"malformed embedded consumer protocol: {e}") from None
    return version, struct


def parse_subscription(data: bytes) -> Subscription:
    version, s = _embedded(CONSUMER_SUBSCRIPTION, data)
    owned: dict[str, tuple[int, ...]] = {}
    if version >= 1:
        for tp in s.owned_partitions or ():
            owned[tp.topic] = tuple(tp.partitions)
    return Subscription(version, tuple(s.topics or ()), owned,
                        s.rack_id if version >= 3 else None)


def parse_assignment(data: bytes) -> dict[str, tuple[int, ...]]:
    """ConsumerProtocolAssignment bytes -> {topic: partitions}; empty bytes (a
    member that has not synced yet) -> {}."""
    if not data:
        return {}
    _, a = _embedded(CONSUMER_ASSIGNMENT, data)
    out: dict[str, list[int]] = {}
    for tp in a.assigned_partitions or ():
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return {t: tuple(ps) for t, ps in out.items()}


def encode_assignment(partitions: Mapping[str, Iterable[int]], version: int) -> bytes:
    """{topic: partitions} -> ConsumerProtocolAssignment of ``version`` (clamped to
    0-3), topics and partitions sorted, no user data."""
    version = max(0, min(version, MAX_EMBEDDED_VERSION))
    assigned = [TOPIC_PARTITION.new(topic=t, partitions=sorted(ps))
                for t, ps in sorted(partitions.items()) if ps]
    return encode_prefixed(CONSUMER_ASSIGNMENT, version, assigned_partitions=assigned,
                           user_data=None)


def to_assignment(by_name: dict[str, tuple[int, ...]], topics: Topics) -> Assignment:
    """Names -> topic ids; topics that do not exist (now) are dropped, as Kafka's
    toTopicPartitionMap does."""
    out: Assignment = {}
    for name, partitions in by_name.items():
        meta = topics.by_name(name)
        if meta is not None and partitions:
            out[meta.topic_id] = frozenset(out.get(meta.topic_id, frozenset()) | set(partitions))
    return out


def to_names(assignment: Assignment, names_by_id: dict[uuid.UUID, str]) -> dict[str, tuple[int, ...]]:
    return {names_by_id[tid]: tuple(sorted(ps)) for tid, ps in assignment.items()
            if tid in names_by_id and ps}


def topic_names_by_id(group: ConsumerGroup, topics: Topics) -> dict[uuid.UUID, str]:
    """Every topic id the group may name -> its name (the current topics, then the
    group's subscription metadata for topics deleted since)."""
    out = {meta.topic_id: meta.name for meta in group.subscription_metadata.values()}
    for name in topics.names():
        meta = topics.by_name(name)
        if meta is not None:
            out[meta.topic_id] = name
    return out


# -- upgrade: classic -> consumer --------------------------------------------------------

def can_upgrade(classic: GroupMetadata, policy: MigrationPolicy | str, max_size: int) -> bool:
    """Kafka's validateOnlineUpgrade, for a classic group with members."""
    if not MigrationPolicy.parse(policy).upgrade_enabled:
        log.info("cannot upgrade classic group %s: %s does not allow upgrades",
                 classic.group_id, POLICY_KEY)
        return False
    if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        log.info("cannot upgrade classic group %s: its protocol type is %r, not consumer",
                 classic.group_id, classic.protocol_type)
        return False
    if len(classic.members) > max_size:
        log.info("cannot upgrade classic group %s: %d members exceed group.consumer.max.size %d",
                 classic.group_id, len(classic.members), max_size)
        return False
    return True


def is_empty_classic(classic: GroupMetadata | None) -> bool:
    """An empty classic group is replaced by a new consumer group whatever the policy."""
    return classic is not None and (classic.is_(GroupState.EMPTY) or not classic.members)


def classic_tombstone(group_id: str) -> KeyValue:
    """The classic GroupMetadata tombstone (offsets are other keys: they stay)."""
    return (ot.group_metadata_key(group_id), None)


def _member_metadata(classic: GroupMetadata, member: MemberMetadata) -> bytes:
    """The member's subscription for the group's protocol (its first protocol before
    the group has chosen one: all of a consumer's protocols carry the same topics)."""
    if classic.protocol_name is not None:
        try:
            return member.metadata(classic.protocol_name)
        except KeyError:
            pass
    if not member.protocols:
        raise MigrationError(f"member {member.member_id} of group {classic.group_id} "
                             "has no protocols")
    return member.protocols[0][1]


def upgrade(classic: GroupMetadata, topics: Topics) -> Conversion:
    """The batch that turns ``classic`` into a consumer group (see the module
    docstring, Upgrade step 2). Pure; raises MigrationError."""
    group_id = classic.group_id
    epoch = classic.generation_id
    subscriptions: list[r.MemberSubscription] = []
    targets: list[r.TargetAssignmentMember] = []
    currents: list[r.CurrentAssignment] = []
    for m in classic.members.values():
        try:
            sub = parse_subscription(_member_metadata(classic, m))
            assigned = to_assignment(parse_assignment(m.assignment), topics)
        except MigrationError as e:
            raise MigrationError(f"cannot upgrade the classic group {group_id} to a consumer "
                                 f"group: member {m.member_id}: {e}") from None
        subscriptions.append(r.MemberSubscription(
            group_id, m.member_id, instance_id=m.group_instance_id, rack_id=sub.rack_id,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=sub.topics, rebalance_timeout_ms=m.rebalance_timeout_ms,
            classic=ClassicMemberMetadata(m.session_timeout_ms,
                                          [(name, bytes(meta)) for name, meta in m.protocols])))
        targets.append(r.TargetAssignmentMember(group_id, m.member_id, partitions=assigned))
        currents.append(r.CurrentAssignment(group_id, m.member_id, member_epoch=epoch,
                                            previous_member_epoch=epoch,
                                            state=MemberState.STABLE, assigned=assigned,
                                            pending_revocation={}))
    records: list[r.Record] = [r.GroupEpoch(group_id, epoch), *subscriptions, *targets,
                               r.TargetAssignmentEpoch(group_id, epoch), *currents]
    return Conversion(group_id, records=records, classic_records=[classic_tombstone(group_id)],
                      classic_first=True)


def complete_upgrade(coordinator: ClassicGroups, group_id: str) -> GroupMetadata | None:
    """After the upgrade batch is written: the classic coordinator lets the group go.
    Waiting joins and syncs are answered REBALANCE_IN_PROGRESS (they rejoin, now
    inside the consumer group), session timers end, the group goes Dead and out of
    ``coordinator.groups``. -> the removed group."""
    classic = coordinator.groups.pop(group_id, None)
    if classic is None:
        return None
    for member in list(classic.members.values()):
        classic.maybe_invoke_join(member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS,
                                                     member_id=member.member_id))
        classic.maybe_invoke_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
    if not classic.is_(GroupState.DEAD):
        classic.transition_to(GroupState.DEAD, coordinator.runtime.clock())
    classic.pending_sync_members.clear()
    coordinator.rebalances.check_and_complete(join_key(group_id))
    coordinator.rebalances.check_and_complete(sync_key(group_id))
    for member_id in list(classic.members) + list(classic.pending_members):
        coordinator.heartbeats.check_and_complete(member_key(group_id, member_id))
    log.info("classic group %s (generation %d, %d members) upgraded to a consumer group",
             group_id, classic.generation_id, len(classic.members))
    return classic


# -- downgrade: consumer -> classic ------------------------------------------------------

def uses_classic(group: ConsumerGroup, member_id: str) -> bool:
    member = group.members.get(member_id)
    return member is not None and member.classic is not None


def can_downgrade(group: ConsumerGroup, leaving_member_id: str,
                  policy: MigrationPolicy | str, classic_max_size: int) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember: ``leaving_member_id`` is
    the group's last consumer-protocol member and leaves (or is fenced)."""
    if leaving_member_id not in group.members or uses_classic(group, leaving_member_id):
        return False
    if any(m.classic is None for mid, m in group.members.items() if mid != leaving_member_id):
        return False
    remaining = len(group.members) - 1
    if remaining < 1:
        return False       # an empty group stays a consumer group (Kafka)
    if not MigrationPolicy.parse(policy).downgrade_enabled:
        log.info("cannot downgrade consumer group %s: %s does not allow downgrades",
                 group.group_id, POLICY_KEY)
        return False
    if remaining > classic_max_size:
        log.info("cannot downgrade consumer group %s: %d members exceed group.max.size %d",
                 group.group_id, remaining, classic_max_size)
        return False
    return True


def can_downgrade_replacing(group: ConsumerGroup, replaced_member_id: str,
                            policy: MigrationPolicy | str, classic_max_size: int) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId: a classic static member
    takes the instance id of the group's last consumer-protocol member."""
    if replaced_member_id not in group.members or uses_classic(group, replaced_member_id):
        return False
    if any(m.classic is None for mid, m in group.members.items() if mid != replaced_member_id):
        return False
    if not MigrationPolicy.parse(policy).downgrade_enabled:
        log.info("cannot downgrade consumer group %s: %s does not allow downgrades",
                 group.group_id, POLICY_KEY)
        return False
    return len(group.members) <= classic_max_size


def consumer_group_tombstones(group: ConsumerGroup) -> list[r.Record]:
    """Every record of the group, deleted, in Kafka's order (createGroupTombstoneRecords)."""
    gid = group.group_id
    out: list[r.Record] = []
    out += [r.CurrentAssignment(gid, mid, tombstone=True) for mid in group.members]
    out += [r.TargetAssignmentMember(gid, mid, tombstone=True)
            for mid in dict.fromkeys([*group.members, *group.target])]
    out.append(r.TargetAssignmentEpoch(gid, tombstone=True))
    out += [r.MemberSubscription(gid, mid, tombstone=True) for mid in group.members]
    out.append(r.SubscriptionMetadata(gid, tombstone=True))
    out += [r.RegexResolution(gid, regex, tombstone=True) for regex in group.resolved_regexes]
    out.append(r.GroupEpoch(gid, tombstone=True))
    return out


def downgrade(group: ConsumerGroup, leaving_member_id: str | None, topics: Topics,
              now_ms: int) -> Conversion:
    """The batch that turns ``group`` into a classic group without
    ``leaving_member_id`` (see the module docstring, Downgrade step 2). Pure:
    ``conversion.classic`` is the new classic group, not installed anywhere.
    Raises MigrationError when a member's metadata does not parse."""
    names_by_id = topic_names_by_id(group, topics)
    classic = GroupMetadata(group.group_id, GroupState.STABLE, now_ms)
    classic.generation_id = group.group_epoch
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    for mid, m in group.members.items():
        if mid == leaving_member_id:
            continue
        if m.classic is None or not m.classic.protocols:
            raise MigrationError(f"cannot downgrade the consumer group {group.group_id}: "
                                 f"member {mid} does not use the classic protocol")
        classic.add(MemberMetadata(
            mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
            [(name, bytes(meta)) for name, meta in m.classic.protocols]))
    if not classic.members:
        raise MigrationError(f"cannot downgrade the consumer group {group.group_id}: "
                             "no member would stay")
    try:
        classic.protocol_name = classic.select_protocol()
    except ValueError as e:
        raise MigrationError(f"cannot downgrade the consumer group {group.group_id}: {e}",
                             ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None
    for member in classic.members.values():
        version = parse_subscription(member.metadata(classic.protocol_name)).version
        owned = group.members[member.member_id].assigned
        member.assignment = encode_assignment(to_names(owned, names_by_id), version)
    classic.subscribed_topics = classic.compute_subscribed_topics()
    stored = classic.to_stored({m.member_id: m.assignment for m in classic.members.values()})
    value = ot.group_metadata_value(stored)
    return Conversion(group.group_id, records=consumer_group_tombstones(group),
                      classic_records=[(ot.group_metadata_key(group.group_id), value)],
                      classic_first=False, classic=classic)


def install_downgraded(coordinator: ClassicGroups, conversion: Conversion, *,
                       rebalance: bool = True) -> GroupMetadata:
    """After the downgrade batch is written (and replayed: the consumer group is gone
    from the group map): the classic coordinator takes the group -- its committed
    offsets stay where they are, keyed by the group id -- starts its members'
    session timers and, unless told otherwise, a rebalance (Kafka: a downgrade
    caused by a member leaving)."""
    classic = conversion.classic
    if classic is None:
        raise ValueError(f"conversion of {conversion.group_id} is not a downgrade")
    coordinator.groups[classic.group_id] = classic
    for member in list(classic.members.values()):
        coordinator.extend_session(classic, member)
    if rebalance:
        coordinator.maybe_prepare_rebalance(
            classic, f"downgrade group {classic.group_id} from consumer to classic")
    log.info("consumer group %s downgraded to a classic group (generation %d, %d members)",
             classic.group_id, classic.generation_id, len(classic.members))
    return classic
