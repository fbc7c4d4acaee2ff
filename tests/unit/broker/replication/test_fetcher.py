"""Followers: fetch, append as is, take the HW, truncate by leader epoch (KIP-101/279).

Three in-process brokers over real logs, a fake clock, and FakeLeaderEndpoint
(the follower's fetcher calls the leader's ReplicaManager directly).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.fetcher import FETCHING, TRUNCATING, truncation_for
from broker.replication.leader_endpoint import EpochEndOffset
from protocol import records
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage.config import LogConfig

from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.broker.replication.replication_fakes import FakeCluster, log_bytes
from tests.unit.polling import until

TP = ("t", 0)
NOW = FakeClock().now_ms


def batch(*values: bytes) -> bytearray:
    return build_batch([(None, v, NOW) for v in values])


def values(p, upto: int | None = None) -> list[bytes]:  # noqa: ANN001
    upto = p.log_end_offset if upto is None else upto
    data = log_bytes(p, upto)
    return [r.value for _, h in records.iter_batches(data) for r in records.iter_records(data, _)]


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


async def produce(c: FakeCluster, leader: int, *vals: bytes, acks: int = 1) -> int:
    res = await c.nodes[leader].replicas.appends.append_records(acks, 30_000, {TP: batch(*vals)})
    return res[TP].error


def test_followers_replicate_byte_identical_and_take_the_hw(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, min_isr=2)
        c.elect(1)
        for i in range(5):
            assert await produce(c, 1, b"a%d" % i, b"b%d" % i) == 0
        ack = asyncio.ensure_future(produce(c, 1, b"last", acks=-1))
        await asyncio.sleep(0)
        assert not ack.done()
        await c.replicate(2)
        await asyncio.sleep(0)
        assert ack.done() and ack.result() == 0
        leader = c.nodes[1].partition()
        assert leader.high_watermark == leader.log_end_offset == 11
        await c.replicate(1)
        for n in (2, 3):
            f = c.nodes[n].partition()
            assert f.log_end_offset == 11 and f.high_watermark == 11
            assert log_bytes(f, 11) == log_bytes(leader, 11)  # offsets and epochs kept
            assert f.local_log().leader_epoch_cache.entries() == [(0, 0)]
    run(main())


def test_follower_hw_is_min_of_leader_hw_and_own_leo_never_backwards(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        await produce(c, 1, b"x", b"y")
        f = c.nodes[2].partition()
        await c.nodes[2].fetch_round()  # empty log: no truncation; gets 2 records at leader HW 0
        assert f.log_end_offset == 2 and f.high_watermark == 0
        await c.nodes[2].fetch_round()  # this fetch at 2 moves the leader's HW to 2
        assert c.nodes[1].partition().high_watermark == 2 and f.high_watermark == 2
        assert not f.update_follower_high_watermark(1) and f.high_watermark == 2
        assert not f.update_follower_high_watermark(99) and f.high_watermark == 2  # capped at LEO
    run(main())


def test_kip101_scenario1_restarted_follower_keeps_acked_record(tmp_path: Path) -> None:
    """A follower restarts right after an ack, then the leader dies: with HW
    truncation the follower would drop the acknowledged record m2 (its HW
    still said 1) and, as the new leader, lose it. By epoch it keeps it."""
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2), min_isr=2)
        c.elect(1)
        a, b = c.nodes[1], c.nodes[2]
        assert await produce(c, 1, b"m1", acks=1) == 0
        await c.replicate(3)
        ack = asyncio.ensure_future(produce(c, 1, b"m2", acks=-1))
        await asyncio.sleep(0)
        await b.fetch_round()  # B appends m2 (LEO 2) but the answer carried HW 1
        # B's next fetch at 2 reaches the leader (HW -> 2, m2 acked), but B dies
        # before it reads the answer
        await a.replicas.fetch(2, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(2, 1 << 20, 0, -1, 0)})
        await asyncio.sleep(0)
        assert ack.result() == 0 and a.partition().high_watermark == 2
        assert b.partition().high_watermark == 1 and b.partition().log_end_offset == 2
        b.restart()
        c.elect(1, bump=False, to=[2])  # the controller tells the restarted broker its state
        await b.fetch_round()           # OffsetForLeaderEpoch(0) -> ends at 2: nothing dropped
        assert b.partition().log_end_offset == 2
        a.crash()
        c.elect(2, isr=[2])
        assert values(b.partition()) == [b"m1", b"m2"]
        assert await produce(c, 2, b"m3") == 0
        assert values(b.partition()) == [b"m1", b"m2", b"m3"]
    run(main())


def test_kip101_scenario2_divergent_logs_reconcile_by_epoch(tmp_path: Path) -> None:
    """Both replicas crash; B (which missed m2) comes back first, becomes leader
    and writes m3 at offset 1. A returns as follower: it must drop its m2 and
    take m3, leaving identical logs (HW truncation would keep m2 at offset 1
    on A, m3 on B: divergence)."""
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        a, b = c.nodes[1], c.nodes[2]
        await produce(c, 1, b"m1")
        await c.replicate(3)
        await produce(c, 1, b"m2")          # on A only
        assert a.partition().log_end_offset == 2 and b.partition().log_end_offset == 1
        a.crash()
        b.crash()
        b.start()
        c.elect(2, isr=[2], to=[2])         # epoch 1, B leads
        await produce(c, 2, b"m3")
        a.start()
        c.elect(2, isr=[2], bump=False, to=[1])
        fetcher = a.fetchers.fetcher_for(TP)
        assert fetcher is not None and fetcher.partitions[TP].state == TRUNCATING
        await a.fetch_round()
        endpoint = fetcher.endpoint
        assert endpoint.epoch_requests[-1] == {TP: (1, 0)}  # (current epoch, our latest epoch)
        assert a.partition().log_end_offset == 2            # truncated to 1, then fetched m3
        assert values(a.partition()) == [b"m1", b"m3"]
        assert log_bytes(a.partition(), 2) == log_bytes(b.partition(), 2)
        assert a.partition().local_log().leader_epoch_cache.entries() == [(0, 0), (1, 1)]
    run(main())


def test_diverging_epoch_in_fetch_answer_truncates(tmp_path: Path) -> None:
    """A follower already fetching with a divergent tail (Fetch v12
    LastFetchedEpoch): the leader answers DivergingEpoch, the follower truncates
    there, and its divergent fetch offset never counted as its LEO."""
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        a, b = c.nodes[1], c.nodes[2]
        await produce(c, 1, b"m1")
        await c.replicate(3)
        await produce(c, 1, b"m2", b"m2b")     # A only: offsets 1-2 at epoch 0
        a.crash()
        c.elect(2, isr=[2], to=[2])            # B leads at epoch 1
        await produce(c, 2, b"x1", b"x2", b"x3")
        a.start()
        c.elect(2, isr=[2, 1], bump=False, to=[1])
        s = a.fetchers.fetcher_for(TP).partitions[TP]
        s.state = FETCHING                     # skip step 1: go straight to Fetch
        leader = b.partition()
        await a.fetch_round()                  # DivergingEpoch (0, 1): truncate to 1
        assert a.partition().log_end_offset == 1
        assert leader.followers[1].log_end_offset == -1   # the divergent offset 3 did not count
        await a.fetch_round()
        assert values(a.partition()) == [b"m1", b"x1", b"x2", b"x3"]
        await a.fetch_round()
        assert leader.high_watermark == 4
    run(main())


def test_leader_of_an_empty_epoch_follows_again(tmp_path: Path) -> None:
    """Broker 1 leads epoch 1 and loses it before appending: its cache says "epoch 1
    starts at 3", which no other replica knows. Following broker 2 (epoch 2), it is
    told "epoch 0 ends at 3" — its own LEO. No record goes, but the empty epoch must,
    or it claims epoch 1 for ever and never fetches another record (found by
    tests/fault/test_zk_faults.py)."""
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2, 3))
        c.elect(2)
        await produce(c, 2, b"v0", b"v1", b"v2")
        await c.replicate(3)
        c.elect(1)                                  # epoch 1: broker 1 writes nothing
        c.elect(2)                                  # epoch 2
        await produce(c, 2, b"v3", b"v4", b"v5")
        await c.replicate(20)
        follower = c.nodes[1].partition()
        assert values(follower) == [b"v0", b"v1", b"v2", b"v3", b"v4", b"v5"]
        assert [e for e, _ in follower.local_log().leader_epoch_cache.entries()] == [0, 2]
        assert c.nodes[2].partition().high_watermark == 6
    run(main())


def test_kip279_follower_epochs_jump_over_the_leaders() -> None:
    """Truncation steps when the leader's answer names an epoch we never had."""
    class P:  # the parts of Partition truncation_for reads
        def __init__(self, entries: list[tuple[int, int]], leo: int) -> None:
            from storage.leader_epoch import LeaderEpochCache
            cache = LeaderEpochCache.__new__(LeaderEpochCache)
            cache.path = "/nonexistent/leader-epoch-checkpoint"
            cache._epochs = [e for e, _ in entries]
            cache._offsets = [o for _, o in entries]
            self.log_end_offset = leo
            self._log = type("L", (), {"leader_epoch_cache": cache, "log_end_offset": leo})()

        def local_log(self):  # noqa: ANN201
            return self._log

    p = P([(0, 0), (2, 5)], 8)
    # we asked about epoch 2; the leader knows only up to epoch 1, which ends at 6 there
    assert truncation_for(p, EpochEndOffset(0, 1, 6)) == (5, False)   # cut to our epoch 0's end, ask again
    assert truncation_for(p, EpochEndOffset(0, 0, 3)) == (3, True)
    assert truncation_for(p, EpochEndOffset(0, 2, 7)) == (7, True)
    assert truncation_for(p, EpochEndOffset(0, 2, 99)) == (8, True)   # never above our LEO
    assert truncation_for(p, EpochEndOffset(0, -1, -1)) == (None, True)  # leader has no epochs
    assert truncation_for(P([(3, 4)], 6), EpochEndOffset(0, 1, 2)) == (2, True)  # nothing of ours <= 1


def test_out_of_range_restarts_at_leader_log_start_or_truncates(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1, isr=[1])
        a, b = c.nodes[1], c.nodes[2]
        b.crash()
        for i in range(4):
            await produce(c, 1, b"v%d" % i)
        assert a.replicas.delete_records(TP, 3) == (0, 3)
        b.start()
        c.elect(1, isr=[1], bump=False, to=[2])
        await b.fetch_round()   # empty log: straight to fetching; fetch at 0 -> out of range
        assert b.partition().log_start_offset == b.partition().log_end_offset == 3
        await b.fetch_round()
        assert values(b.partition()) == [b"v3"]
    run(main())


def test_fenced_follower_backs_off_until_new_leader_and_isr(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        a, b = c.nodes[1], c.nodes[2]
        await produce(c, 1, b"m1")
        # the leader moves on to epoch 1 but the follower has not heard yet
        c.elect(1, to=[1])
        await b.fetch_round()
        s = b.fetchers.fetcher_for(TP).partitions[TP]
        assert s.delayed_until_ms == c.clock.now_ms + 100 and b.partition().log_end_offset == 0
        assert not await b.fetch_round()       # backing off
        c.elect(1, bump=False, to=[2])         # now it hears: re-added at epoch 1
        await b.fetch_round()
        await b.fetch_round()
        assert values(b.partition()) == [b"m1"]
    run(main())


def test_leader_down_fetcher_raises_connection_error_and_follower_becomes_leader(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        await produce(c, 1, b"m1")
        await c.replicate(3)
        c.nodes[1].crash()
        try:
            await c.nodes[2].fetch_round()
            raise AssertionError("expected a connection error")
        except ConnectionError:
            pass
        c.elect(2, isr=[2])
        assert c.nodes[2].fetchers.fetchers == {}   # leading now: no fetcher
        assert await produce(c, 2, b"m2") == 0
    run(main())


def test_follower_segments_roll_and_big_batches_split_across_fetches(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2), config=LogConfig(segment_bytes=4096))
        c.elect(1)
        for n in c.nodes.values():
            for f in n.fetchers.fetchers.values():
                f.max_partition_bytes = 1500
        for i in range(20):
            await produce(c, 1, b"%d" % i + b"z" * 400)
        await c.replicate(30)
        a, b = c.nodes[1].partition(), c.nodes[2].partition()
        assert b.log_end_offset == 20 and a.high_watermark == 20
        assert len(b.local_log().segments) > 1
        assert log_bytes(a, 20) == log_bytes(b, 20)
    run(main())


def test_error_codes_on_follower_fetch_for_non_leader(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        res = await c.nodes[2].replicas.fetch(1, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(0, 100)})
        assert res[TP].error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    run(main())


class _HangingEndpoint:
    """A leader whose connection died silently: every request waits until close()."""

    def __init__(self, leader_id: int) -> None:
        self.leader_id = leader_id
        self.calls = 0
        self.closes = 0
        self._pending: list[asyncio.Future[None]] = []

    async def _hang(self) -> dict:  # type: ignore[type-arg]
        self.calls += 1
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append(fut)
        await fut
        return {}

    async def fetch(self, partitions: dict) -> dict:  # type: ignore[type-arg]
        return await self._hang()

    async def fetch_epoch_end_offsets(self, partitions: dict) -> dict:  # type: ignore[type-arg]
        return await self._hang()

    async def close(self) -> None:
        from client import KafkaConnectionError
        self.closes += 1
        for fut in self._pending:
            if not fut.done():
                fut.set_exception(KafkaConnectionError("closed", "leader", 9092))
        self._pending.clear()


def test_a_new_leader_and_isr_drops_a_connection_stuck_in_a_partition(
        tmp_path: Path, monkeypatch: object) -> None:
    """A request that has waited past STUCK_REQUEST_S when a LeaderAndIsr re-adds
    the partition: the connection is closed and the fetcher asks again, instead of
    waiting for the request timeout (30 s) after the network healed."""
    from broker.replication import fetcher as fetcher_module
    from broker.replication.fetcher import ReplicaFetcher
    # an hour first: the request is not stuck long enough yet however slow the machine
    monkeypatch.setattr(fetcher_module, "STUCK_REQUEST_S", 3600.0)  # type: ignore[attr-defined]

    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        p = c.nodes[2].partition()
        endpoint = _HangingEndpoint(1)
        f = ReplicaFetcher(3, endpoint, backoff_ms=10)   # type: ignore[arg-type]
        f.start()
        f.add(p)
        await until(lambda: endpoint.calls == 1, "the first request sent")
        f.add(p)                               # not stuck long enough yet
        await asyncio.sleep(0.01)
        assert (endpoint.calls, endpoint.closes) == (1, 0)
        monkeypatch.setattr(fetcher_module, "STUCK_REQUEST_S", 0.05)  # type: ignore[attr-defined]
        await asyncio.sleep(0.1)               # the request has now waited past it
        f.add(p)                               # the controller reached us again
        await until(lambda: endpoint.closes >= 1 and endpoint.calls == 2,
                    "the connection closed and the request sent again")
        await f.stop()
    run(main())



class _RefusingEndpoint:
    """A leader that refuses connections until ``fail`` is cleared; then each request
    waits for ``gate`` (so the fetcher's loop yields) and answers nothing."""

    def __init__(self, leader_id: int) -> None:
        self.leader_id = leader_id
        self.fail = True
        self.gate = asyncio.Event()

    async def _call(self) -> dict:  # type: ignore[type-arg]
        from client import KafkaConnectionError
        if self.fail:
            raise KafkaConnectionError("connection refused", "leader", 9092)
        await self.gate.wait()
        self.gate.clear()
        return {}

    async def fetch(self, partitions: dict) -> dict:  # type: ignore[type-arg]
        return await self._call()

    async def fetch_epoch_end_offsets(self, partitions: dict) -> dict:  # type: ignore[type-arg]
        return await self._call()

    async def close(self) -> None:
        pass


def test_a_leader_the_fetcher_cannot_reach_is_unreachable_until_a_round_goes_through(
        tmp_path: Path) -> None:
    """ReplicaFetcherManager.unreachable (FindCoordinator names no coordinator on such a
    leader): set by a round that fails on the connection, cleared by one that works."""
    from broker.replication.fetcher import ReplicaFetcherManager

    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1)
        endpoint = _RefusingEndpoint(1)
        manager = ReplicaFetcherManager(3, lambda _leader: endpoint,  # type: ignore[arg-type,return-value]
                                        backoff_ms=10)
        assert not manager.unreachable(1)            # no fetcher from broker 1 yet
        manager.add_partitions([c.nodes[2].partition()])
        for _ in range(100):
            if manager.unreachable(1):
                break
            await asyncio.sleep(0.01)
        assert manager.unreachable(1) and not manager.unreachable(2)
        endpoint.fail = False
        for _ in range(100):
            endpoint.gate.set()
            await asyncio.sleep(0.01)
            if not manager.unreachable(1):
                break
        assert not manager.unreachable(1)
        await manager.shutdown()
    run(main())
