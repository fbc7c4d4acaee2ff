"""A leader that knows it is cut off: writes refused while this broker cannot be
sure it still leads (issue 16, item 6).

The rule, and its timing next to Kafka's:

* **ZooKeeper connection lost** (the client saw no answer for 2/3 of
  ``zookeeper.session.timeout.ms``, or the connection broke; the session may
  still live): an append as leader to a partition with an ISR follower that
  has not fetched for ``quiet_ms`` (max(1 s, session timeout / 6)) is refused
  with NOT_LEADER_OR_FOLLOWER — Produce with any acks (acks=1 included),
  transaction markers, the coordinators' own writes — until the connection is
  back. That is the 2013 case: cut off from ZooKeeper *and* from followers.
  ZooKeeper cannot expire our session, and so the controller cannot elect
  another leader, before the full session timeout since it last heard from us;
  the fence is up by 2/3 + 1/6 of it at the latest. Clients told
  NOT_LEADER_OR_FOLLOWER refresh their metadata from the other brokers and find
  the new leader there; our own Metadata answers name no leader for a fenced
  partition (LEADER_NOT_AVAILABLE, leader -1), or a client that asks only us
  would be sent straight back. Produces already waiting (acks=all, appended, not
  yet committed: their followers went quiet with the cut) are answered at once
  by the fence sweep (``ReplicaManager.sweep_fenced``, every ``quiet_ms`` / 2
  while the fence is up) with REQUEST_TIMED_OUT: held to their request timeout
  (30 s by default) they kept every stock client measured on this broker for the
  whole fault, since the waiting requests fill a client's in-flight window (5 per
  connection for the Java client, kafka-python, aiokafka and librdkafka's
  idempotent producer) and a client asks for new metadata only when an answer
  tells it to (issue 30; tests/fault/client_campaign.py measures them). The client
  retries, is refused NOT_LEADER_OR_FOLLOWER and moves. Not NOT_LEADER_OR_FOLLOWER
  for these (Kafka's DelayedProduce answer when leadership moves): the batch is in
  our log and may be in the new leader's, and librdkafka takes NOT_LEADER_OR_
  FOLLOWER as "not persisted" -- its idempotent producer may then re-send the
  batch under a new epoch, written twice (confluentinc/librdkafka#4953);
  REQUEST_TIMED_OUT is "possibly persisted", retried with the same sequence and
  de-duplicated wherever the batch got to. A plain producer may write it twice
  (at least once, as Kafka). While every ISR follower still fetches (ZooKeeper down
  for everyone, or we alone lost it) writes go on: no other broker can be made
  leader without ZooKeeper, and acks=all writes wait for those followers anyway;
  an RF-1 partition (no follower) is never fenced for the same reason.
* **Connection back, same session**: nothing can have moved (the controller
  still saw us alive): the fence drops at once.
* **Session expired** (ZooKeeper said so when we reconnected, or it was forced):
  every partition we led stays fenced until the controller's LeaderAndIsr for it
  arrives on the new session (it re-makes us leader, or makes us a follower).

Kafka in ZooKeeper mode has no such fence: a leader cut off from ZooKeeper and
its followers keeps acknowledging acks=1 writes until it learns of the new
leader, and truncates them away afterwards (Jepsen, 2013). Reads are not
fenced (Kafka serves them from a stale leader too; they never lose data).

State has one writer: the broker's ZooKeeper-connection callbacks and the
LeaderAndIsr path, both on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from broker.replication.partition import Partition

log = logging.getLogger(__name__)
TopicPartition = tuple[str, int]


class LeaderFence:
    def __init__(self, broker_id: int, quiet_ms: int = 1000) -> None:
        self.broker_id = broker_id
        self.quiet_ms = quiet_ms                       # a follower this silent counts as gone
        self.reason: str | None = None                 # ZooKeeper connection lost: why
        self.until_leader_and_isr: set[TopicPartition] = set()

    def check(self, tp: TopicPartition, partition: Partition, now_ms: int) -> None:
        """KafkaError(NOT_LEADER_OR_FOLLOWER) when appends to ``tp`` (whose leader
        ``partition`` we hold) are fenced; see the module docstring."""
        if self.reason is not None:
            quiet = self.quiet_followers(partition, now_ms)
            if quiet:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is fenced for {tp[0]}-{tp[1]}: "
                                 f"{self.reason} and ISR followers {quiet} stopped fetching")
        if tp in self.until_leader_and_isr:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.broker_id}: its ZooKeeper session expired; "
                             f"{tp[0]}-{tp[1]} waits for the controller's LeaderAndIsr")

    @property
    def up(self) -> bool:
        """Some partition may be fenced (the cheap question the hot paths ask first)."""
        return self.reason is not None or bool(self.until_leader_and_isr)

    def fenced(self, tp: TopicPartition, partition: Partition, now_ms: int) -> bool:
        """``check`` as a predicate (the Metadata handler's question)."""
        if not self.up:
            return False
        try:
            self.check(tp, partition, now_ms)
        except KafkaError:
            return True
        return False

    def quiet_followers(self, partition: Partition, now_ms: int) -> list[int]:
        """ISR followers that have not fetched (nor been caught up) for ``quiet_ms``."""
        out = []
        for r in sorted(partition.isr):
            state = partition.followers.get(r)
            if r != partition.local_broker_id and (state is None or now_ms - max(
                    state.last_fetch_ms, state.last_caught_up_ms) > self.quiet_ms):
                out.append(r)
        return out

    # -- the broker's ZooKeeper connection ------------------------------------------------

    def connection_lost(self) -> None:
        if self.reason is None:
            log.warning("broker %d: ZooKeeper connection lost: writes to partitions whose "
                        "ISR followers stop fetching are refused (NOT_LEADER_OR_FOLLOWER) "
                        "until it is back", self.broker_id)
        self.reason = "its ZooKeeper connection is lost"

    def connection_back(self) -> None:
        """Reconnected within the session, or registered again on a new one."""
        if self.reason is not None:
            log.info("broker %d: ZooKeeper connection back, leader fence lifted%s",
                     self.broker_id, f" ({len(self.until_leader_and_isr)} partitions wait for "
                     "LeaderAndIsr)" if self.until_leader_and_isr else "")
        self.reason = None

    def session_expired(self, led: Iterable[TopicPartition]) -> None:
        self.until_leader_and_isr.update(led)
        if self.reason is None:
            self.reason = "its ZooKeeper session expired"
        log.warning("broker %d: ZooKeeper session expired; %d led partitions fenced until "
                    "the controller's LeaderAndIsr", self.broker_id,
                    len(self.until_leader_and_isr))

    # -- the controller's word -----------------------------------------------------------

    def leader_and_isr(self, tp: TopicPartition) -> None:
        """A LeaderAndIsr for ``tp`` was applied: its state is the controller's again."""
        self.until_leader_and_isr.discard(tp)
