"""Both kinds of consumer group as an operator sees them: the classic protocol's
(JoinGroup/SyncGroup, described by DescribeGroups) and KIP-848's consumer
protocol (ConsumerGroupHeartbeat, described by ConsumerGroupDescribe, key 69),
turned into one ``ConsumerGroupDescription`` (Kafka's admin class of that name),
so ``pybroker consumer-groups`` and the console print either the same way.

Verbs (each takes an open ``KafkaConnection`` to the right broker and returns
plain results; error codes are returned, never raised; ``group_admin.py``
routes them to coordinators with retries):

* (ListGroups with KIP-848's TypesFilter and GroupType is client.groups.list_groups:
  below v5 the type is "" — a pre-KIP-848 broker, every group classic — and a type
  filter is applied by the caller.)
* ``consumer_group_describe``: ConsumerGroupDescribe v0-1. A group that is not a
  consumer group (a classic one, or none) answers GROUP_ID_NOT_FOUND.

How a group is described (Kafka 4.0's DescribeConsumerGroupsHandler):
1. ConsumerGroupDescribe at the coordinator, when it speaks API 69;
2. on GROUP_ID_NOT_FOUND there (a classic group, or no group), or when it does
   not speak it, DescribeGroups (``classic_description``): an unknown group is
   then "Dead" with no members, as Kafka answers.

Facts a classic group has not got stay None (member and group epochs, target
assignment, member type), so a printer shows "-" for them, as Kafka's tool does.
Assignments are sorted ``(topic, partition)`` tuples; ConsumerGroupDescribe's
carry topic names beside the ids, a topic deleted meanwhile shows its id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from client.connection import KafkaConnection
from client.consumer_protocol import decode_assignment
from client.groups import DescribedGroup
from client.verbs import TP
from protocol.api_keys import ApiKey
from protocol.spec import api

CLASSIC, CONSUMER = "classic", "consumer"         # ListGroups v5 GroupType (lower case)
GROUP_TYPES = (CLASSIC, CONSUMER)
MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER = 0, 1  # ConsumerGroupDescribe v1 MemberType


# -- ListGroups with types --------------------------------------------------------------


# -- ConsumerGroupDescribe ---------------------------------------------------------------


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TP, ...]                       # current, sorted
    target_assignment: tuple[TP, ...] | None = None  # consumer groups only
    member_epoch: int | None = None                  # consumer groups only
    upgraded: bool | None = None     # True: consumer protocol, False: classic (in a consumer
                                     # group, migration); None: unknown / a classic group
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    group_type: str                  # "classic" / "consumer"
    state: str                       # Kafka's state strings; "Dead" for no group
    protocol_type: str               # "consumer" (a classic group's may be "" or other)
    assignor: str                    # classic: the chosen protocol; consumer: the assignor
    members: tuple[MemberDescription, ...] = ()
    group_epoch: int | None = None           # consumer groups only
    assignment_epoch: int | None = None      # consumer groups only (target assignment epoch)
    error: int = 0
    error_message: str | None = None

    @property
    def is_consumer_protocol(self) -> bool:
        return self.group_type == CONSUMER


def _partitions(assignment: Any) -> tuple[TP, ...]:
    """ConsumerGroupDescribe's Assignment -> sorted (topic, partition)s; a topic
    without a name (deleted meanwhile) is shown by its id."""
    return tuple(sorted((t.topic_name or str(t.topic_id), p)
                        for t in assignment.topic_partitions for p in t.partitions))


def _upgraded(member_type: int) -> bool | None:
    if member_type == MEMBER_TYPE_CONSUMER:
        return True
    if member_type == MEMBER_TYPE_CLASSIC:
        return False
    return None


def consumer_description(g: Any) -> ConsumerGroupDescription:
    """One ConsumerGroupDescribe DescribedGroup -> the common description."""
    members = tuple(MemberDescription(
        member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id,
        host=m.client_host, assignment=_partitions(m.assignment),
        target_assignment=_partitions(m.target_assignment), member_epoch=int(m.member_epoch),
        upgraded=_upgraded(int(getattr(m, "member_type", -1))), rack_id=m.rack_id,
        subscribed_topic_names=tuple(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex) for m in g.members)
    return ConsumerGroupDescription(
        group_id=g.group_id, group_type=CONSUMER, state=g.group_state, protocol_type="consumer",
        assignor=g.assignor_name, members=members, group_epoch=int(g.group_epoch),
        assignment_epoch=int(g.assignment_epoch), error=int(g.error_code),
        error_message=g.error_message)


def safe_assignment(data: bytes) -> tuple[TP, ...]:
    """A classic member's ConsumerProtocol assignment, sorted; garbled -> ()."""
    try:
        return tuple(sorted(decode_assignment(data)))
    except ValueError:
        return ()


def classic_description(g: DescribedGroup) -> ConsumerGroupDescription:
    """One DescribeGroups group -> the common description (no epochs, no target)."""
    members = tuple(MemberDescription(
        member_id=m.member_id, instance_id=m.group_instance_id, client_id=m.client_id,
        host=m.client_host, assignment=safe_assignment(m.member_assignment))
        for m in g.members)
    return ConsumerGroupDescription(
        group_id=g.group_id, group_type=CLASSIC, state=g.state, protocol_type=g.protocol_type,
        assignor=g.protocol, members=members, error=g.error)


async def consumer_group_describe(conn: KafkaConnection, groups: Iterable[str]
                                  ) -> list[ConsumerGroupDescription]:
    """ConsumerGroupDescribe: each group's description (``error`` set per group;
    GROUP_ID_NOT_FOUND: not a consumer group)."""
    spec = api(ApiKey.CONSUMER_GROUP_DESCRIBE).request
    resp = await conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, spec.new(
        group_ids=list(groups), include_authorized_operations=False))
    assert resp is not None
    return [consumer_description(g) for g in resp.groups]


__all__ = ["CLASSIC", "CONSUMER", "GROUP_TYPES", "ConsumerGroupDescription",
           "MemberDescription", "classic_description", "consumer_description",
           "consumer_group_describe", "safe_assignment"]
