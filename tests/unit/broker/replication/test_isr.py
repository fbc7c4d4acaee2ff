"""Leader side: ISR shrink/expand timing, maximal ISR while AlterPartition is
pending, HW never backwards, fencing of stale answers, acks=all outcomes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.replication.fetch_reads import FetchPartitionRequest
from protocol.errors import ErrorCode
from protocol.records import build_batch

from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.broker.replication.replication_fakes import FakeCluster

TP = ("t", 0)
NOW = FakeClock().now_ms
LAG = 10_000


def batch(n: int = 1) -> bytearray:
    return build_batch([(None, b"v", NOW) for _ in range(n)])


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


async def follower_fetch(c: FakeCluster, replica: int, offset: int, epoch: int = 0) -> None:
    await c.nodes[1].replicas.fetch(replica, 0, 1, 1 << 20, 0, {
        TP: FetchPartitionRequest(offset, 1 << 20, c.leader_epoch, -1, epoch if offset else -1)})


def answer(c: FakeCluster, isr: list[int], error: int = 0, *, which: int = -1) -> None:
    """Play the controller: commit (or reject) the leader's latest proposal."""
    sub = c.nodes[1].alter.submitted[which]
    if not error:
        c.partition_epoch += 1
    sub.on_answer(error, sub.change.leader_epoch, tuple(isr), c.partition_epoch)


def test_shrink_after_lag_time_and_hw_waits_for_the_commit(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(4)})
        await follower_fetch(c, 2, 4)
        await follower_fetch(c, 3, 2)          # 3 lags from now on
        assert p.high_watermark == 2
        c.clock.advance(LAG)
        await follower_fetch(c, 2, 4)
        assert rm.maybe_shrink_isr() == 0       # exactly the lag: still in sync
        c.clock.advance(1)
        assert rm.maybe_shrink_isr() == 1
        change = p.pending_isr
        assert change is not None and change.proposed == {1, 2} and change.is_shrink
        assert p.isr == {1, 2, 3} and p.maximal_isr == {1, 2, 3}
        assert not p.maybe_shrink_isr(LAG)      # one change in flight at a time
        await follower_fetch(c, 2, 4)
        assert p.high_watermark == 2            # 3 still holds it: the shrink is not committed
        answer(c, [1, 2])
        assert p.isr == {1, 2} and p.pending_isr is None and p.partition_epoch == c.partition_epoch
        assert p.high_watermark == 4            # committed: the HW moves past 3
    run(main())


def test_steady_follower_under_load_stays_in_sync(tmp_path: Path) -> None:
    """Under steady appends a follower never equals the leader's current LEO;
    reaching the LEO of its previous fetch counts as caught up (Kafka)."""
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm = c.nodes[1].replicas
        offset = 0
        for _ in range(30):
            await rm.appends.append_records(1, 1000, {TP: batch(2)})
            await follower_fetch(c, 2, offset)
            await follower_fetch(c, 3, offset)
            offset += 2                       # what the fetch returned; the leader moves on
            await rm.appends.append_records(1, 1000, {TP: batch(0 + 1)})
            offset += 1
            c.clock.advance(1000)
        assert c.nodes[1].partition().out_of_sync_replicas(LAG) == set()
        assert rm.maybe_shrink_isr() == 0
    run(main())


def test_expand_when_caught_up_to_hw_with_maximal_isr(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1, isr=[1, 2])
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(6)})
        await follower_fetch(c, 2, 6)
        assert p.high_watermark == 6
        await follower_fetch(c, 3, 3)           # below the HW: not yet
        assert p.pending_isr is None
        await rm.appends.append_records(1, 1000, {TP: batch(2)})   # LEO 8
        await follower_fetch(c, 3, 6)           # reached the HW (6): proposed
        change = p.pending_isr
        assert change is not None and change.proposed == {1, 2, 3} and not change.is_shrink
        assert p.isr == {1, 2} and p.maximal_isr == {1, 2, 3}
        await follower_fetch(c, 2, 8)
        assert p.high_watermark == 6            # the pending member 3 (LEO 6) counts already
        await follower_fetch(c, 3, 8)
        assert p.high_watermark == 8
        answer(c, [1, 2, 3])
        assert p.isr == {1, 2, 3} and p.pending_isr is None
    run(main())


def test_expand_needs_the_leader_epoch_start(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1, isr=[1])
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(3)})
        c.elect(1, isr=[1], to=[1])              # epoch 1 starts at offset 3; HW 3
        await follower_fetch(c, 2, 2)
        assert p.pending_isr is None
        p.local_log().update_high_watermark(3)
        assert p.leader_epoch_start_offset == 3
        await follower_fetch(c, 2, 3)
        assert p.pending_isr is not None and p.pending_isr.proposed == {1, 2}
    run(main())


def test_stale_answers_are_fenced(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        c.clock.advance(LAG + 1)
        assert rm.maybe_shrink_isr() == 1
        # a LeaderAndIsr (new leader epoch, newer partition epoch) replaces the proposal
        c.elect(1, isr=[1, 2, 3], to=[1])
        assert p.pending_isr is None
        answer(c, [1], which=0)                  # the old proposal's answer arrives late
        assert p.isr == {1, 2, 3}
        # a fresh proposal answered with an older partition epoch is ignored too
        c.clock.advance(LAG + 1)
        assert rm.maybe_shrink_isr() == 1
        sub = c.nodes[1].alter.submitted[-1]
        sub.on_answer(0, p.leader_epoch, (1,), p.partition_epoch - 1)
        assert p.isr == {1, 2, 3} and p.pending_isr is sub.change
        # the controller says our partition epoch is stale: stay pending, propose nothing
        answer(c, [], ErrorCode.INVALID_UPDATE_VERSION)
        assert p.pending_isr is sub.change and not p.maybe_shrink_isr(LAG)
        # OPERATION_NOT_ATTEMPTED: back to the committed ISR, free to propose again
        c.elect(1, isr=[1, 2, 3], to=[1])
        assert rm.maybe_shrink_isr() == 0        # a new leader epoch: everyone caught up now
        c.clock.advance(LAG + 1)
        assert rm.maybe_shrink_isr() == 1
        answer(c, [], ErrorCode.OPERATION_NOT_ATTEMPTED)
        assert p.pending_isr is None and p.isr == {1, 2, 3}
        assert rm.maybe_shrink_isr() == 1
    run(main())


def test_acks_all_not_enough_replicas_after_append_when_isr_shrinks(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2), lag_ms=LAG, min_isr=2)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        task = asyncio.ensure_future(rm.appends.append_records(-1, 60_000, {TP: batch(2)}))
        await asyncio.sleep(0)
        assert not task.done()
        c.clock.advance(LAG + 1)
        assert rm.maybe_shrink_isr() == 1
        await asyncio.sleep(0)
        assert not task.done()                   # pending shrink: HW still held by 2
        answer(c, [1])
        await asyncio.sleep(0)
        r = task.result()[TP]
        assert (r.error, r.base_offset) == (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 0)
        assert p.high_watermark == 2
        r = (await rm.appends.append_records(-1, 1000, {TP: batch()}))[TP]
        assert r.error == ErrorCode.NOT_ENOUGH_REPLICAS   # before the append now
        assert p.log_end_offset == 2
    run(main())


def test_hw_never_backwards_and_consumer_fetch_completes_when_it_moves(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2), lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        for _ in range(5):
            await rm.appends.append_records(1, 1000, {TP: batch(1)})
        consumer = asyncio.ensure_future(rm.fetch(-1, 5000, 1, 1 << 20, 0,
                                                  {TP: FetchPartitionRequest(0, 1 << 20)}))
        await asyncio.sleep(0)
        assert not consumer.done()               # nothing below the HW yet
        await follower_fetch(c, 2, 3)
        await asyncio.sleep(0)
        res = consumer.result()[TP]
        assert res.high_watermark == 3 and res.size > 0
        await follower_fetch(c, 2, 1)            # a stale fetch offset cannot move it back
        assert p.high_watermark == 3
        c.elect(1, to=[1])                        # new epoch: follower LEOs unknown again
        assert p.high_watermark == 3 and p.followers[2].log_end_offset == -1
    run(main())


def test_session_skip_reads_nothing_yet_keeps_the_follower_in_sync_and_sees_new_data(
        tmp_path: Path) -> None:
    """ReplicaManager.fetch(unchanged_since=...): a partition whose change_seq is the
    one at which the session last found the follower caught up is not read (left out
    of the result), the follower still counts as caught up (no ISR shrink after the
    lag time), and once the partition changes it is read and answered again."""
    async def main() -> None:
        c = FakeCluster(tmp_path, lag_ms=LAG)
        c.elect(1)
        rm, p = c.nodes[1].replicas, c.nodes[1].partition()
        await rm.appends.append_records(1, 1000, {TP: batch(4)})
        req = {TP: FetchPartitionRequest(4, 1 << 20, c.leader_epoch, -1, 0)}
        await follower_fetch(c, 3, 4)
        first = await rm.fetch(2, 0, 1, 1 << 20, 0, req)
        seq = first[TP].caught_up_seq
        assert seq == p.change_seq and first[TP].size == 0   # caught up: remembered
        for _ in range(3):                 # idle fetches over twice the lag time
            c.clock.advance(LAG // 2)
            await follower_fetch(c, 3, 4)
            again = await rm.fetch(2, 0, 1, 1 << 20, 0, req, unchanged_since={TP: seq})
            assert TP not in again       # skipped, not read
        assert rm.maybe_shrink_isr() == 0 and p.isr == {1, 2, 3}
        await rm.appends.append_records(1, 1000, {TP: batch(2)})
        assert p.change_seq != seq
        after = await rm.fetch(2, 0, 1, 1 << 20, 0, req, unchanged_since={TP: seq})
        assert after[TP].size > 0 and after[TP].caught_up_seq == -1   # read: 2 new records
    run(main())


def test_slow_leader_and_isr_does_not_shrink_at_once(tmp_path: Path) -> None:
    """Followers' lag clocks start when the whole LeaderAndIsr is applied: with
    a clock that moves past replica.lag.time.max.ms while it is applied (as
    creating 10,000 partitions takes), no follower is out of sync right after."""
    c = FakeCluster(tmp_path, lag_ms=LAG)
    rm = c.nodes[1].replicas
    real_become = rm._become

    def slow_become(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        out = real_become(*args, **kwargs)
        c.clock.advance(LAG + 1)           # applying this partition took a while
        return out
    rm._become = slow_become               # type: ignore[method-assign]
    c.elect(1, to=[1])
    p = c.nodes[1].partition()
    assert p.is_leader and p.isr == {1, 2, 3}
    assert rm.maybe_shrink_isr() == 0
    c.clock.advance(LAG + 1)                # followers that then never fetch do go
    assert rm.maybe_shrink_isr() == 1
