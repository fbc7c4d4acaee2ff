"""A simulated cluster of KIP-848 clients around the pure group core.

``Sim`` plays the coordinator (heartbeat -> records -> replay, with a record
log) and ``SimClient``s play consumers the way the stock clients behave: a
client owns partitions, heartbeats with its epoch and what it owns, and on a
new assignment first gives up what is no longer in it, then takes the new
partitions — possibly a few heartbeats later (``step``). Responses can be
lost. ``check()`` asserts the invariants after every step.
"""

from __future__ import annotations

import random
import uuid

from coordinator.group.consumer import group_logic as gl
from coordinator.group.consumer.model import Assignment, ConsumerGroup, MemberState
from coordinator.group.consumer.records import Record
from coordinator.group.consumer.replay import replay
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.consumer.fake_topics import FakeTopics

GROUP = "g"


class SimClient:
    def __init__(self, member_id: str, topics: list[str] | None, regex: str | None = None,
                 instance_id: str | None = None, rack: str | None = None,
                 assignor: str | None = None) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.rack = rack
        self.assignor = assignor
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}
        self.desired: Assignment = {}
        self.topics = topics
        self.regex = regex
        self.send_subscription = True
        # after a lost response the client's assignment may be out of date:
        # it takes no new partitions until it hears from the coordinator again
        # (Kafka makes the same assumption: the server trusts reported owned
        # partitions and drops unreported ones without a revocation round)
        self.stale = False

    def owned_assignment(self) -> Assignment:
        return {t: frozenset(ps) for t, ps in self.owned.items() if ps}

    def revoke(self) -> None:
        for t in list(self.owned):
            self.owned[t] &= set(self.desired.get(t, ()))
            if not self.owned[t]:
                del self.owned[t]

    def acquire(self) -> None:
        self.revoke()
        if self.stale:
            return
        for t, ps in self.desired.items():
            self.owned.setdefault(t, set()).update(ps)


class Sim:
    def __init__(self, seed: int = 0, config: gl.GroupConfig | None = None) -> None:
        self.rng = random.Random(seed)
        self.topics = FakeTopics()
        self.config = config or gl.GroupConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self.log: list[Record] = []
        self.clients: dict[str, SimClient] = {}
        self.now = 0
        self.ids = 0

    @property
    def group(self) -> ConsumerGroup | None:
        return self.groups.get(GROUP)

    def apply(self, records: list[Record]) -> None:
        for r in records:
            replay(self.groups, r)
            self.log.append(r)

    def new_id(self) -> str:
        self.ids += 1
        return f"member-{self.ids:03d}"

    # -- client actions -------------------------------------------------------------------

    def join(self, topics: list[str] | None, **kw: object) -> SimClient:
        c = SimClient(self.new_id(), topics, **kw)  # type: ignore[arg-type]
        self.clients[c.member_id] = c
        self.heartbeat(c)
        return c

    def heartbeat(self, c: SimClient, lose_response: bool = False) -> gl.HeartbeatResult:
        self.now += 100
        full = c.epoch == 0 or c.send_subscription
        hb = gl.Heartbeat(
            group_id=GROUP, member_id=c.member_id, member_epoch=c.epoch,
            # like the rack, the instance id is sent in full requests only
            instance_id=c.instance_id if full else None, rack_id=c.rack if full else None,
            rebalance_timeout_ms=30000 if full else -1,
            subscribed_topic_names=(c.topics if c.topics is not None else [])
            if full and (c.topics is not None or c.regex is None) else None,
            subscribed_topic_regex=c.regex if full and c.regex is not None else None,
            server_assignor=c.assignor if full else None,
            owned={} if c.epoch == 0 else c.owned_assignment(),
            api_version=1)
        res, records = gl.heartbeat(self.group, hb, self.topics, self.config, self.now)
        if res.error:
            assert not records
        self.apply(records)
        self.check()
        if lose_response:
            # as the Java client and librdkafka do after a failed heartbeat:
            # the next one is a full request, so it gets the assignment again
            c.send_subscription = True
            c.stale = True
            return res
        c.send_subscription = False
        if res.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            c.owned.clear()
            c.desired = {}
            c.epoch = 0
            c.send_subscription = True
        elif res.error == 0:
            c.epoch = res.member_epoch
            if res.assignment is not None:
                c.desired = res.assignment
                c.stale = False
        return res

    def leave(self, c: SimClient, static: bool = False) -> None:
        c.owned.clear()
        hb = gl.Heartbeat(group_id=GROUP, member_id=c.member_id,
                          member_epoch=-2 if static else -1, instance_id=c.instance_id,
                          api_version=1)
        res, records = gl.heartbeat(self.group, hb, self.topics, self.config, self.now)
        assert res.error == 0, res
        self.apply(records)
        del self.clients[c.member_id]
        self.check()

    def crash(self, c: SimClient) -> None:
        """The client dies; its session expires and the coordinator fences it."""
        del self.clients[c.member_id]
        if self.group is not None:
            self.apply(gl.fence_member(self.group, c.member_id, self.topics))
        self.check()

    def refresh(self) -> None:
        if self.group is not None:
            self.apply(gl.refresh_metadata(self.group, self.topics, self.now))
        self.check()

    # -- invariants -----------------------------------------------------------------------

    def check(self) -> None:
        # clients: no partition owned by two live clients
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for c in self.clients.values():
            for t, ps in c.owned.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and " \
                                               f"{c.member_id}"
                    seen[(t, p)] = c.member_id
        g = self.group
        if g is None:
            return
        # server: assigned and pending revocation are disjoint across members,
        # and owners says exactly that
        owners: dict[tuple[uuid.UUID, int], str] = {}
        for m in g.members.values():
            for part in (m.assigned, m.pending_revocation):
                for t, ps in part.items():
                    for p in ps:
                        assert (t, p) not in owners, f"{(t, p)} held by {owners[(t, p)]} " \
                                                     f"and {m.member_id}"
                        owners[(t, p)] = m.member_id
        assert owners == g.owners
        # a client only owns what the server thinks it holds
        for c in self.clients.values():
            m = g.members.get(c.member_id)
            for t, ps in c.owned.items():
                for p in ps:
                    assert m is not None and owners.get((t, p)) == c.member_id, \
                        f"client {c.member_id} owns {(t, p)} the server gave to " \
                        f"{owners.get((t, p))}"

    def replayed_from_scratch(self) -> dict[str, ConsumerGroup]:
        groups: dict[str, ConsumerGroup] = {}
        for r in self.log:
            replay(groups, r)
        return groups

    # -- convergence ----------------------------------------------------------------------

    def converge(self, rounds: int = 50) -> None:
        for _ in range(rounds):
            for c in sorted(self.clients.values(), key=lambda c: c.member_id):
                self.heartbeat(c)
                c.acquire()
                self.check()
            g = self.group
            if g is not None and gl.state_of(g).value == "Stable" and all(
                    c.owned_assignment() == g.members[c.member_id].assigned
                    for c in self.clients.values()):
                return
        members = [(m.member_id, m.member_epoch, m.state)
                   for m in (self.group.members.values() if self.group else ())]
        raise AssertionError(f"no convergence: {gl.state_of(self.group)} {members}")

    def stable_members_are_reconciled(self) -> bool:
        g = self.group
        assert g is not None
        return all(m.state == MemberState.STABLE for m in g.members.values())
