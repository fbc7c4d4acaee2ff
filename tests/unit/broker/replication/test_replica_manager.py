"""Partition + ReplicaManager over a real PartitionLog: append, HW, purgatories, epochs."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from protocol import records
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage.config import LogConfig
from storage.log_manager import LogManager

from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

TP = ("t", 0)
NOW = FakeClock().now_ms  # batch timestamps: recent, so producers are not expired


def batch(n: int = 1, *, pid: int = -1, seq: int = -1, epoch: int = -1, size: int = 10) -> bytearray:
    return build_batch([(b"k", b"x" * size, NOW + i) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def test_append_assigns_offsets_moves_hw_and_stamps_epoch(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    b.lead("t")  # leader epoch 1
    r1 = run(b.replicas.appends.append_records(1, 1000, {TP: batch(3)}))[TP]
    r2 = run(b.replicas.appends.append_records(-1, 1000, {TP: batch(2)}))[TP]
    assert (r1.error, r1.base_offset, r2.error, r2.base_offset) == (0, 0, 0, 3)
    p = b.replicas.partition(*TP)
    assert p.high_watermark == p.log_end_offset == 5
    data = p.read(0, 1 << 20, upper=None, min_one_batch=True).slice.read()
    headers = [h for _, h in records.iter_batches(data)]
    assert [h.base_offset for h in headers] == [0, 3]
    assert {h.partition_leader_epoch for h in headers} == {1}
    assert p.local_log().leader_epoch_cache.entries()[-1] == (1, 0)


@pytest.mark.parametrize("mutate,code", [
    (lambda d: d.__setitem__(40, d[40] ^ 1), ErrorCode.CORRUPT_MESSAGE),
    (lambda d: d.__setitem__(16, 1), ErrorCode.INVALID_RECORD),
    (lambda d: d.extend(b"\x00" * 5), ErrorCode.CORRUPT_MESSAGE),
])
def test_bad_batches_append_nothing(tmp_path: Path, mutate, code) -> None:  # noqa: ANN001
    b = FakeBroker(tmp_path)
    b.lead("t")
    data = batch(2)
    mutate(data)
    r = run(b.replicas.appends.append_records(1, 1000, {TP: data}))[TP]
    assert r.error == code and r.base_offset == -1
    assert b.replicas.partition(*TP).log_end_offset == 0


def test_message_too_large_and_single_batch_rule(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path, config=LogConfig(max_message_bytes=200))
    b.lead("t")
    r = run(b.replicas.appends.append_records(1, 1000, {TP: batch(1, size=300)}))[TP]
    assert r.error == ErrorCode.MESSAGE_TOO_LARGE
    two = batch(1) + batch(1)
    r = run(b.replicas.appends.append_records(1, 1000, {TP: two}, single_batch=True))[TP]
    assert r.error == ErrorCode.INVALID_RECORD
    assert b.replicas.partition(*TP).log_end_offset == 0
    assert run(b.replicas.appends.append_records(1, 1000, {TP: two}))[TP].error == 0


def test_unknown_partition_follower_and_bad_acks(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("f", replicas=(1, 2), leader=2)
    res = run(b.replicas.appends.append_records(1, 1000, {("nope", 0): batch(), ("f", 0): batch()}))
    assert res[("nope", 0)].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert res[("f", 0)].error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert run(b.replicas.appends.append_records(2, 1000, {TP: batch()}))[TP].error == ErrorCode.INVALID_REQUIRED_ACKS


def test_acks_all_waits_for_follower_and_times_out(tmp_path: Path) -> None:
    async def main() -> None:
        b = FakeBroker(tmp_path, min_isr=2)
        b.lead("t", replicas=(1, 2))
        p = b.replicas.partition(*TP)
        task = asyncio.ensure_future(b.replicas.appends.append_records(-1, 5000, {TP: batch(2)}))
        await asyncio.sleep(0)
        assert not task.done() and p.high_watermark == 0 and p.log_end_offset == 2
        # the follower fetches at 2 (its LEO): HW moves, the produce completes
        fetched = await b.replicas.fetch(2, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(2, 1 << 20)})
        assert fetched[TP].high_watermark == 2
        await asyncio.sleep(0)
        assert task.result()[TP].error == 0
        # no follower progress: REQUEST_TIMED_OUT after the timeout
        task = asyncio.ensure_future(b.replicas.appends.append_records(-1, 5000, {TP: batch(1)}))
        await asyncio.sleep(0)
        b.clock.advance(5000)
        await asyncio.sleep(0)
        assert task.result()[TP].error == ErrorCode.REQUEST_TIMED_OUT
    run(main())


def test_min_insync_replicas(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path, min_isr=2)
    b.lead("t", replicas=(1, 2), isr=(1,))
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: batch()}))[TP]
    assert r.error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert run(b.replicas.appends.append_records(1, 1000, {TP: batch()}))[TP].error == 0


def test_hw_is_min_leo_over_isr_and_never_backwards(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2, 3))
    p = b.replicas.partition(*TP)
    run(b.replicas.appends.append_records(1, 1000, {TP: batch(10)}))
    assert p.high_watermark == 0
    assert not p.update_follower_fetch_state(2, 8)
    assert p.update_follower_fetch_state(3, 6) and p.high_watermark == 6
    assert not p.update_follower_fetch_state(3, 4)  # a stale fetch offset
    assert p.high_watermark == 6
    assert p.update_follower_fetch_state(3, 10) and p.high_watermark == 8


def test_fetch_waits_for_min_bytes_then_for_max_wait(tmp_path: Path) -> None:
    async def main() -> None:
        b = FakeBroker(tmp_path)
        b.lead("t")
        req = {TP: FetchPartitionRequest(0, 1 << 20)}
        task = asyncio.ensure_future(b.replicas.fetch(-1, 500, 1, 1 << 20, 0, req))
        await asyncio.sleep(0)
        assert not task.done()
        await b.replicas.appends.append_records(1, 1000, {TP: batch(3)})
        await asyncio.sleep(0)
        res = task.result()[TP]
        assert res.size > 0 and res.high_watermark == 3
        task = asyncio.ensure_future(b.replicas.fetch(-1, 500, 1, 1 << 20, 0,
                                                      {TP: FetchPartitionRequest(3, 1 << 20)}))
        await asyncio.sleep(0)
        b.clock.advance(500)
        await asyncio.sleep(0)
        assert task.result()[TP].size == 0
    run(main())


def test_fetch_errors_and_at_least_one_batch(tmp_path: Path) -> None:
    async def main() -> None:
        b = FakeBroker(tmp_path)
        b.lead("t", partitions=2)
        b.lead("t", partitions=2)  # epoch 1
        for i in range(3):
            await b.replicas.appends.append_records(1, 1000, {("t", 0): batch(1, size=500), ("t", 1): batch(1, size=500)})
        f = b.replicas.fetch
        res = await f(-1, 0, 1, 100, 0, {("t", 0): FetchPartitionRequest(0, 100),
                                          ("t", 1): FetchPartitionRequest(0, 100)})
        one = res[("t", 0)].size
        assert one > 500 and res[("t", 1)].size == 0  # one whole batch despite the limits
        res = await f(-1, 0, 1, 100, 0, {TP: FetchPartitionRequest(0, 100)}, hard_max_bytes_limit=True)
        assert res[TP].size == 100  # v0-2: a hard limit, partial batch
        assert (await f(-1, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(99, 100)}))[TP].error == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (await f(-1, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(0, 100, 0)}))[TP].error == ErrorCode.FENCED_LEADER_EPOCH
        assert (await f(-1, 0, 1, 1 << 20, 0, {TP: FetchPartitionRequest(0, 100, 5)}))[TP].error == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert (await f(-1, 0, 1, 1 << 20, 0, {("x", 0): FetchPartitionRequest(0, 100)}))[("x", 0)].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run(main())


def test_consumers_read_below_hw_followers_to_leo(tmp_path: Path) -> None:
    async def main() -> None:
        b = FakeBroker(tmp_path)
        b.lead("t", replicas=(1, 2))
        await b.replicas.appends.append_records(1, 1000, {TP: batch(2)})
        req = {TP: FetchPartitionRequest(0, 1 << 20)}
        assert (await b.replicas.fetch(-1, 0, 1, 1 << 20, 0, req))[TP].size == 0
        assert (await b.replicas.fetch(2, 0, 1, 1 << 20, 0, req))[TP].size > 0
    run(main())


def test_leader_and_isr_epoch_fencing_and_stop_replica(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    tid = b.lead("t")  # epoch 0, controller epoch 1
    rm = b.replicas
    state = PartitionState("t", 0, tid, 1, 1, 0, (1,), 0, (1,))
    assert rm.become_leader_or_follower(1, [state]) == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert rm.become_leader_or_follower(0, [state]) == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    other = PartitionState("u", 0, tid, 1, 2, 0, (2,), 0, (2,))
    assert rm.become_leader_or_follower(1, [other]) == {("u", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    follower = PartitionState("t", 0, tid, 2, 2, 1, (1, 2), 0, (1, 2))
    assert rm.become_leader_or_follower(2, [follower]) == {TP: 0}
    assert not rm.partition(*TP).is_leader
    assert rm.stop_replicas(2, [("t", 0, False, 0)]) == {TP: ErrorCode.FENCED_LEADER_EPOCH}
    log_dir = rm.partition(*TP).local_log().dir
    assert rm.stop_replicas(2, [("t", 0, True)]) == {TP: 0}
    assert rm.partition(*TP) is None and not os.path.exists(log_dir)


def test_stop_replica_delete_removes_files_off_the_event_loop(tmp_path: Path) -> None:
    """Issue 17: StopReplica(delete) renames the log dir on the loop (the name is free
    at once), then removes the files and rewrites the checkpoints in a worker thread."""
    b = FakeBroker(tmp_path)
    b.lead("t")
    rm = b.replicas
    log_dir = rm.partition(*TP).local_log().dir
    purge_threads: list[bool] = []
    purge = b.logs.purge_deleted

    def recording_purge(doomed: list[str]) -> None:
        purge_threads.append(threading.current_thread() is threading.main_thread())
        purge(doomed)
    b.logs.purge_deleted = recording_purge  # type: ignore[method-assign]

    async def main() -> None:
        assert rm.stop_replicas(1, [("t", 0, True)]) == {TP: 0}
        assert not os.path.exists(log_dir)          # renamed before stop_replicas returns
        while rm._purges:
            await asyncio.sleep(0.01)
    run(main())
    assert purge_threads == [False]                 # ran once, not on the loop's thread
    assert not any(n.endswith("-delete") for n in os.listdir(os.path.dirname(log_dir)))


def test_idempotent_dedup_survives_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    b = FakeBroker(tmp_path, clock=clock)
    b.lead("t")
    first = batch(2, pid=9, epoch=0, seq=0)
    r = run(b.replicas.appends.append_records(-1, 1000, {TP: first}))[TP]
    last = batch(1, pid=9, epoch=0, seq=2)
    run(b.replicas.appends.append_records(-1, 1000, {TP: last}))
    assert run(b.replicas.appends.append_records(-1, 1000, {TP: first}))[TP].base_offset == r.base_offset == 0
    b.logs.shutdown()                   # writes the producer snapshot at the log end
    assert sorted(os.listdir(tmp_path / "logs" / "t-0")).count("00000000000000000003.snapshot")
    # a new broker process over the same directory
    logs = LogManager([str(tmp_path / "logs")], clock=clock)
    logs.startup()
    rm = ReplicaManager(1, logs, clock=clock, timer=clock)
    tid = b.metadata.ids["t"]
    assert rm.become_leader_or_follower(2, [PartitionState("t", 0, tid, 2, 1, 1, (1,), 0, (1,))]) == {TP: 0}
    p = rm.partition(*TP)
    assert p.log_end_offset == 3
    # the snapshot keeps each producer's last batch (Kafka's format): its retry is a
    # duplicate answered with the original offset; an older batch's retry is not known
    dup = run(rm.appends.append_records(-1, 1000, {TP: last}))[TP]
    assert (dup.error, dup.base_offset) == (0, 2) and p.log_end_offset == 3
    older = run(rm.appends.append_records(-1, 1000, {TP: first}))[TP]
    assert older.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and p.log_end_offset == 3
    gap = run(rm.appends.append_records(-1, 1000, {TP: batch(1, pid=9, epoch=0, seq=9)}))[TP]
    assert gap.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    nxt = run(rm.appends.append_records(-1, 1000, {TP: batch(1, pid=9, epoch=0, seq=3)}))[TP]
    assert (nxt.error, nxt.base_offset) == (0, 3)
    old = run(rm.appends.append_records(-1, 1000, {TP: batch(1, pid=9, epoch=-1 + 0, seq=0)}))[TP]
    assert old.error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_list_offsets_and_delete_records(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    b.lead("t")
    rm = b.replicas
    for ts in (100, 300, 200):
        run(rm.appends.append_records(1, 1000, {TP: build_batch([(None, b"v", ts)])}))
    assert rm.fetch_offset_for_timestamp(TP, -1, 0)[0] == 3
    assert rm.fetch_offset_for_timestamp(TP, -2, 0)[0] == 0
    assert rm.fetch_offset_for_timestamp(TP, -3, 0)[:2] == (1, 300)
    assert rm.fetch_offset_for_timestamp(TP, 150, 0)[:2] == (1, 300)
    assert rm.fetch_offset_for_timestamp(TP, 301, 0)[0] == -1
    assert rm.delete_records(TP, 5) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert rm.delete_records(TP, 2) == (0, 2)
    assert rm.fetch_offset_for_timestamp(TP, -2, 0)[0] == 2
    assert rm.legacy_offsets_before(TP, -1, 10, True)[0] == 3


def test_a_retried_batch_already_in_the_log_is_never_answered_not_persisted(
        tmp_path: Path) -> None:
    """ISR down to the leader (below min.insync.replicas) while an idempotent producer
    retries a batch the log already holds: NOT_ENOUGH_REPLICAS_AFTER_APPEND ("possibly
    persisted", the same offsets), not NOT_ENOUGH_REPLICAS ("not persisted", which
    makes librdkafka re-send it under a new epoch: a duplicate). A new batch is still
    refused before the append."""
    from protocol.records import build_batch

    def idem(seq: int, n: int = 1) -> bytearray:
        return build_batch([(None, b"v%d" % (seq + i), 1) for i in range(n)],
                           producer_id=7, producer_epoch=0, base_sequence=seq)

    async def main() -> None:
        b = FakeBroker(tmp_path, min_isr=2)
        b.lead("t", replicas=(1, 2))
        first = asyncio.ensure_future(b.replicas.appends.append_records(-1, 5000, {TP: idem(0, 2)}))
        await asyncio.sleep(0)
        assert not first.done()
        b.lead("t", replicas=(1, 2), isr=(1,))      # the follower left the ISR
        await asyncio.sleep(0)
        retry = (await b.replicas.appends.append_records(-1, 5000, {TP: idem(0, 2)}))[TP]
        assert (retry.error, retry.base_offset) == (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, 0)
        fresh = (await b.replicas.appends.append_records(-1, 5000, {TP: idem(2)}))[TP]
        assert fresh.error == ErrorCode.NOT_ENOUGH_REPLICAS
        assert b.replicas.partition(*TP).log_end_offset == 2      # nothing written twice
        first.cancel()
    run(main())


def test_batches_behind_a_refused_one_get_its_error_not_out_of_order(tmp_path: Path) -> None:
    """A producer's next batch refused unwritten (ISR below min.insync.replicas, not the
    leader): the batches pipelined behind it get the same error until it is written,
    not OUT_OF_ORDER_SEQUENCE_NUMBER, which makes librdkafka bump its epoch and write
    the unacknowledged messages of its other partitions twice (librdkafka#4953). A gap
    with no refusal behind it is still out of order."""
    def idem(seq: int) -> bytearray:
        return batch(1, pid=7, epoch=0, seq=seq)

    b = FakeBroker(tmp_path, min_isr=2)
    b.lead("t", replicas=(1, 2))
    rm = b.replicas.appends
    assert run(rm.append_records(1, 1000, {TP: idem(0)}))[TP].error == 0
    b.lead("t", replicas=(1, 2), isr=(1,))                   # the follower left the ISR
    assert run(rm.append_records(-1, 1000, {TP: idem(1)}))[TP].error == \
        ErrorCode.NOT_ENOUGH_REPLICAS                         # R1: refused, not written
    b.lead("t", replicas=(1, 2), isr=(1, 2))                  # back before R2 arrives
    assert run(rm.append_records(1, 1000, {TP: idem(2)}))[TP].error == \
        ErrorCode.NOT_ENOUGH_REPLICAS                         # R2: R1's answer again
    assert run(rm.append_records(1, 1000, {TP: idem(1)}))[TP].error == 0    # R1 retried
    assert run(rm.append_records(1, 1000, {TP: idem(2)}))[TP].error == 0    # R2 follows
    assert run(rm.append_records(1, 1000, {TP: idem(9)}))[TP].error == \
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER                # a gap nothing explains
    # refused by the leader fence (ZooKeeper lost, the follower quiet), which lifts
    # before the next batch arrives: that one gets NOT_LEADER_OR_FOLLOWER too
    fence = b.replicas.fence
    fence.quiet_ms = 1000
    fence.connection_lost()
    b.clock.advance(1500)
    assert run(rm.append_records(1, 1000, {TP: idem(3)}))[TP].error == \
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    fence.connection_back()
    assert run(rm.append_records(1, 1000, {TP: idem(4)}))[TP].error == \
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert [run(rm.append_records(1, 1000, {TP: idem(s)}))[TP].error for s in (3, 4)] == [0, 0]


def test_paced_leader_and_isr_gives_the_loop_turns_and_applies_one_at_a_time(
        tmp_path: Path) -> None:
    """A LeaderAndIsr of many new partitions lets other callbacks run between slices
    (here a slice of 0 s: a turn after every partition), and a second LeaderAndIsr or a
    StopReplica waits for the first to finish: they apply in order, as one each."""
    b = FakeBroker(tmp_path)
    tid = b.lead("t")
    rm = b.replicas
    many = [PartitionState("m", p, tid, 1, 1, 0, (1,), 0, (1,)) for p in range(20)]
    later = PartitionState("m", 0, tid, 1, 1, 1, (1,), 0, (1,))     # the next leader epoch

    async def main() -> None:
        turns = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal turns
            while not done.is_set():
                turns += 1
                await asyncio.sleep(0)

        tick = asyncio.create_task(ticker())
        first = asyncio.create_task(rm.become_leader_or_follower_paced(1, many, slice_s=0.0))
        second = asyncio.create_task(rm.become_leader_or_follower_paced(1, [later]))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not first.done() and not second.done()
        assert 0 < len([tp for tp in rm.partitions if tp[0] == "m"]) < 20   # partly applied
        assert await first == {("m", p): 0 for p in range(20)}
        assert await second == {("m", 0): 0}
        done.set()
        await tick
        assert turns >= 10                       # the loop ran other callbacks meanwhile
        assert rm.partition("m", 0).leader_epoch == 1
        assert all(rm.partition("m", p).is_leader for p in range(20))
    run(main())


def test_paced_leader_and_isr_from_an_old_controller_changes_nothing(tmp_path: Path) -> None:
    b = FakeBroker(tmp_path)
    tid = b.lead("t")
    old = PartitionState("n", 0, tid, 0, 1, 0, (1,), 0, (1,))
    assert run(b.replicas.become_leader_or_follower_paced(0, [old])) == {
        ("n", 0): ErrorCode.STALE_CONTROLLER_EPOCH}
    assert b.replicas.partition("n", 0) is None


def test_the_parked_fetch_probe_agrees_with_a_read(tmp_path: Path) -> None:
    """probe_partition (what a DelayedFetch re-checks on each change) says "data" when
    a read would return records and "answer now" when a read would return an error or
    a diverging epoch, for followers (to the LEO) and consumers (to the HW / LSO), at
    every position, epoch and min_bytes -- without reading the log when min_bytes <= 1."""
    from broker.replication.fetch_reads import probe_partition, read_partition
    b = FakeBroker(tmp_path)
    b.lead("t", replicas=(1, 2))
    p = b.replicas.partition(*TP)
    for n in (3, 2, 4):
        run(b.replicas.appends.append_records(1, 1000, {TP: batch(n)}))
    assert p.update_follower_fetch_state(2, 5) and p.high_watermark == 5
    leo = p.log_end_offset
    log_reads = 0
    real_read = p.read

    def counted_read(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        nonlocal log_reads
        log_reads += 1
        return real_read(*args, **kwargs)
    p.read = counted_read  # type: ignore[method-assign]
    checked = cheap = 0
    for replica_id in (-1, 2):
        for isolation in (0, 1):
            for offset in range(-1, leo + 3):
                for epoch in (-1, p.leader_epoch, p.leader_epoch + 1):
                    for last_fetched in (-1, p.leader_epoch):
                        req = FetchPartitionRequest(offset, 1 << 20, epoch, -1, last_fetched)
                        read = read_partition(p, req, replica_id, isolation, 1 << 20, True)
                        for min_bytes in (0, 1, 10_000):
                            before = log_reads
                            size, must = probe_partition(p, req, replica_id, isolation,
                                                         min_bytes)
                            assert (size > 0) == (read.size > 0), (replica_id, offset, epoch)
                            assert must == bool(read.error or read.diverging_epoch)
                            if min_bytes > 1:
                                assert size == read.size
                            elif read.size > 0:     # data: known without a log read
                                assert log_reads == before, (replica_id, offset, min_bytes)
                                cheap += 1
                            checked += 1
    assert checked > 500 and cheap > 50
    missing = FetchPartitionRequest(0, 1 << 20)
    assert probe_partition(None, missing, 2, 0, 1) == (0, True)
