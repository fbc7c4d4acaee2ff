"""The ISR facts a leader keeps (broker/why/isr_facts.py), through the real
replication code: a shrink and an expand proposed by the leader and committed by
(the test playing) the controller, a removal by the controller's LeaderAndIsr,
the replicas holding the HW back, and the leader's view of each replica."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.why import isr_facts
from protocol.why_model import EXPAND, SHRINK
from protocol.records import build_batch

from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.broker.replication.replication_fakes import FakeCluster
from tests.unit.broker.replication.test_isr import answer, follower_fetch

TP = ("t", 0)
NOW = FakeClock().now_ms
LAG = 10_000


def batch(n: int) -> bytearray:
    return build_batch([(None, b"v", NOW) for _ in range(n)])


def test_shrink_then_expand_are_recorded_with_reasons_and_lags(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(4)})
        await follower_fetch(c, 2, 4)
        await follower_fetch(c, 3, 2)
        # 3 holds the HW at its LEO (2) while the leader is at 4
        assert (p.high_watermark, p.log_end_offset) == (2, 4)
        assert isr_facts.hw_held_by(p) == [3]
        c.clock.advance(LAG + 1)
        await follower_fetch(c, 2, 4)
        assert rm.maybe_shrink_isr() == 1
        assert p.why.changes() == []               # proposed, not committed: nothing yet
        answer(c, [1, 2])
        [shrink] = p.why.changes()
        assert (shrink.kind, shrink.replica, shrink.isr_after) == (SHRINK, 3, [1, 2])
        assert shrink.lag_ms == LAG + 1 and shrink.lag_messages == 2
        assert "not caught up for 10,001 ms (replica.lag.time.max.ms=10000)" in shrink.reason
        assert "2 messages behind" in shrink.reason
        assert shrink.time_ms == c.clock.now_ms
        assert isr_facts.hw_held_by(p) == []        # HW == LEO once 3 no longer counts

        await follower_fetch(c, 3, 4)               # caught up: the leader proposes it back
        answer(c, [1, 2, 3])
        shrink2, expand = p.why.changes()
        assert shrink2 == shrink
        assert (expand.kind, expand.replica, expand.isr_after) == (EXPAND, 3, [1, 2, 3])
        assert expand.reason == "caught up: its log end offset 4 reached the high watermark 4"
        assert expand.lag_ms == 0
    asyncio.run(main())


def test_a_removal_by_the_controller_is_recorded_before_the_state_is_replaced(
        tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(3)})
        await follower_fetch(c, 2, 3)
        await follower_fetch(c, 3, 1)
        c.clock.advance(4000)
        c.elect(1, [1, 2], to=[1, 2])               # the controller dropped broker 3
        [change] = p.why.changes()
        assert (change.kind, change.replica, change.isr_after) == (SHRINK, 3, [1, 2])
        assert change.reason.startswith("removed by the controller (LeaderAndIsr, leader epoch 1)")
        assert "last fetch from it 4,000 ms ago" in change.reason
        assert change.lag_messages == 2
        c.elect(1, [1, 2], to=[1, 2])               # the same ISR again: nothing new
        assert len(p.why.changes()) == 1
    asyncio.run(main())


def test_partition_why_is_the_leaders_view(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(5)})
        await follower_fetch(c, 2, 5)
        w = isr_facts.partition_why(p)
        assert (w.topic, w.partition, w.leader, w.leader_epoch) == ("t", 0, 1, 0)
        assert (w.isr, w.log_end_offset, w.high_watermark) == ([1, 2, 3], 5, 0)
        assert w.hw_held_by == [3]                  # never fetched: LEO unknown (-1)
        by_id = {r.broker_id: r for r in w.replicas}
        assert by_id[1].log_end_offset == 5 and by_id[1].last_fetch_ms == -1
        assert by_id[2].log_end_offset == 5 and by_id[2].last_fetch_ms == c.clock.now_ms
        assert by_id[2].last_caught_up_ms == c.clock.now_ms
        assert by_id[3].log_end_offset == -1 and by_id[3].last_fetch_ms == -1
        assert all(r.in_isr for r in w.replicas)
    asyncio.run(main())
