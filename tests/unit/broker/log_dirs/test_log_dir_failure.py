"""broker/log_dirs: the failure channel and the handler, over a real LogManager with
two log dirs (one of them failing through FailingDir) and a real ReplicaManager.

What KIP-112 asks of the broker: the produce that hits the error is answered
KAFKA_STORAGE_ERROR and never acknowledged; waiting acks=all produces and every
later request for the dir's partitions get KAFKA_STORAGE_ERROR; the other dir is
served; the controller is told once per batch; no dir left -> the broker halts."""

from __future__ import annotations

import asyncio
import errno
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.log_dirs import LogDirFailureChannel, LogDirFailureHandler
from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.partition_state import PartitionState
from broker.replication.replica_manager import ReplicaManager
from protocol.errors import ErrorCode, KafkaError
from protocol.records import build_batch
from storage.config import LogConfig
from storage.log_manager import LogManager

from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.polling import until
from tests.unit.storage.failing_dir import FailingDir

NOW = FakeClock().now_ms
T0, T1, T2 = ("t", 0), ("t", 1), ("t", 2)        # dirs a, b, a (fewest logs first)


def batch(n: int = 1) -> bytearray:
    return build_batch([(b"k", b"v" * 20, NOW + i) for i in range(n)])


class Recorder:
    def __init__(self) -> None:
        self.fetchers_removed: list[Any] = []
        self.notified = 0
        self.fail_notify = 0
        self.halted: list[str] = []
        self.resigned: list[Any] = []

    # the fetcher seam
    def add_partitions(self, partitions: Any) -> None:
        pass

    def remove_partitions(self, tps: Any) -> None:
        self.fetchers_removed += list(tps)

    async def shutdown(self) -> None:
        pass

    async def notify(self) -> None:
        if self.fail_notify:
            self.fail_notify -= 1
            raise ConnectionError("ZooKeeper away")
        self.notified += 1


class Node:
    """A broker's storage and replication with the log-dir failure handling wired."""

    def __init__(self, tmp_path: Path) -> None:
        self.a, self.b = str(tmp_path / "a"), str(tmp_path / "b")
        self.clock = FakeClock()
        self.channel = LogDirFailureChannel()
        self.logs = LogManager([self.a, self.b], LogConfig(), clock=self.clock,
                               on_dir_failure=self.channel.maybe_add_offline_log_dir)
        self.logs.startup(broker_id=1)
        self.rec = Recorder()
        self.replicas = ReplicaManager(1, self.logs, clock=self.clock, timer=self.clock,
                                       min_insync_replicas=lambda _t: 2, fetchers=self.rec)
        self.handler = LogDirFailureHandler(
            self.logs, self.replicas, notify_controller=self.rec.notify,
            on_offline=self.rec.resigned.extend, halt=self.rec.halted.append, retry_s=0.01)
        self.tid = uuid.uuid4()
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.tasks = [asyncio.ensure_future(self.channel.run(self.handler.handle)),
                      asyncio.ensure_future(self.handler.run_notifier())]

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def lead(self, partition: int, epoch: int = 0, *, is_new: bool = True,
             replicas: tuple[int, ...] = (1, 2)) -> int:
        state = PartitionState("t", partition, self.tid, 1, 1, epoch, replicas, 0, replicas,
                               is_new=is_new)
        return self.replicas.become_leader_or_follower(1, [state])[("t", partition)]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_failed_dir_goes_offline_and_the_other_serves(tmp_path: Path) -> None:
    async def main() -> None:
        n = Node(tmp_path)
        n.start()
        for p in range(3):
            assert n.lead(p) == 0
        assert [n.logs.dir_of(*tp) for tp in (T0, T1, T2)] == [n.a, n.b, n.a]
        rm = n.replicas
        # an acks=all produce waits for the follower on t-2 (in dir a)
        waiting = asyncio.ensure_future(rm.appends.append_records(-1, 30_000, {T2: batch()}))
        await asyncio.sleep(0)
        assert not waiting.done()
        with FailingDir(n.a, errno.ENOSPC) as disk:
            disk.fail()
            res = await rm.appends.append_records(1, 30_000, {T0: batch(3), T1: batch(2)})
            # the produce that hit the error: KAFKA_STORAGE_ERROR at once, nothing appended
            assert res[T0].error == ErrorCode.KAFKA_STORAGE_ERROR
            await until(lambda: waiting.done() and n.rec.notified == 1,
                        "dir a handled and the controller told")
        assert waiting.result()[T2].error == ErrorCode.KAFKA_STORAGE_ERROR
        assert res[T1].error == 0                # dir b: appended
        assert n.channel.offline_log_dirs.keys() == {n.a}
        assert n.handler.handled == [n.a] and n.logs.live_log_dirs == [n.b]
        assert rm.offline_partitions == {T0, T2} and set(rm.partitions) == {T1}
        assert set(n.rec.fetchers_removed) >= {T0, T2} and set(n.rec.resigned) == {T0, T2}
        assert n.rec.notified == 1 and not n.rec.halted
        # every request for the offline partitions answers KAFKA_STORAGE_ERROR
        res = await rm.appends.append_records(1, 1000, {T0: batch(), T1: batch()})
        assert (res[T0].error, res[T1].error) == (ErrorCode.KAFKA_STORAGE_ERROR, 0)
        fetched = await rm.fetch(-1, 0, 0, 1 << 20, 0, {T0: FetchPartitionRequest(0, 1 << 20),
                                                        T1: FetchPartitionRequest(0, 1 << 20)})
        assert fetched[T0].error == ErrorCode.KAFKA_STORAGE_ERROR and fetched[T1].error == 0
        with pytest.raises(KafkaError) as e:
            rm.fetch_offset_for_timestamp(T0, -1, 0)
        assert e.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert rm.last_offset_for_leader_epoch(T2, -1, 0)[0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert n.lead(0, epoch=1) == ErrorCode.KAFKA_STORAGE_ERROR      # LeaderAndIsr
        assert rm.stop_replicas(1, [("t", 0, False)])[T0] == ErrorCode.KAFKA_STORAGE_ERROR
        # KIP-112's rule: not new, in no live dir, a dir offline -> no empty log
        assert n.lead(7, is_new=False) == ErrorCode.KAFKA_STORAGE_ERROR
        assert ("t", 7) in rm.offline_partitions and n.logs.get_log("t", 7) is None
        assert n.lead(8, is_new=True) == 0 and n.logs.dir_of("t", 8) == n.b
        await n.stop()
    run(main())


def test_the_failing_produce_is_never_acknowledged_and_the_leo_holds(tmp_path: Path) -> None:
    async def main() -> None:
        n = Node(tmp_path)
        n.start()
        assert n.lead(0, replicas=(1,)) == 0
        rm = n.replicas
        assert (await rm.appends.append_records(-1, 1000, {T0: batch(2)}))[T0].error == \
            ErrorCode.NOT_ENOUGH_REPLICAS          # min.insync.replicas 2 over 1 replica
        rm.min_insync_replicas = lambda _t: 1
        assert (await rm.appends.append_records(-1, 1000, {T0: batch(2)}))[T0].error == 0
        p = rm.partition(*T0)
        with FailingDir(n.a, errno.EROFS, short_write=True) as disk:
            disk.fail()
            r = (await rm.appends.append_records(-1, 1000, {T0: batch(5)}))[T0]
            assert r.error == ErrorCode.KAFKA_STORAGE_ERROR and r.base_offset == -1
            assert p.log_end_offset == 2 and p.high_watermark == 2
            await until(lambda: n.handler.handled == [n.a], "dir a handled")
        assert rm.offline_partitions == {T0}
        await n.stop()
    run(main())


def test_notification_is_retried_and_all_dirs_failing_halts(tmp_path: Path) -> None:
    async def main() -> None:
        n = Node(tmp_path)
        n.rec.fail_notify = 2
        n.start()
        n.lead(0)
        n.lead(1)
        n.logs.report_failure(n.b, "test", OSError(errno.EIO, "gone"))
        await until(lambda: n.rec.notified == 1, "the controller told, at the third attempt")
        assert n.rec.notified == 1 and not n.rec.halted      # after two failed attempts
        n.logs.report_failure(n.a, "test", OSError(errno.EIO, "gone too"))
        await until(lambda: bool(n.rec.halted), "the broker halted")
        await asyncio.sleep(0.05)                # a notice asked for would be written by now
        assert n.rec.halted == [f"Shutdown broker because all log dirs in {n.a}, {n.b} "
                                f"have failed"]
        assert n.rec.notified == 1                           # halting: no second notice
        assert n.replicas.offline_partitions == {T0, T1}
        await n.stop()
    run(main())


def test_channel_queues_each_dir_once_from_any_thread() -> None:
    async def main() -> None:
        channel = LogDirFailureChannel()
        handled: list[str] = []
        assert channel.maybe_add_offline_log_dir("/d0", "startup", OSError(5, "x"))  # before run
        task = asyncio.ensure_future(channel.run(handled.append))
        await until(lambda: bool(handled), "the dir queued before run handled")
        assert handled == ["/d0"]
        threads = [threading.Thread(target=channel.maybe_add_offline_log_dir,
                                    args=(f"/d{i % 2 + 1}", "cleaner", OSError(5, "x")))
                   for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        await until(lambda: len(handled) >= 3, "the dirs reported from the threads handled")
        assert sorted(handled) == ["/d0", "/d1", "/d2"]
        assert not channel.maybe_add_offline_log_dir("/d1", "again", OSError(5, "x"))

        def broken(d: str) -> None:
            raise RuntimeError("handler bug")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        task = asyncio.ensure_future(channel.run(broken))
        channel.maybe_add_offline_log_dir("/d3", "x", OSError(5, "x"))
        await asyncio.sleep(0.01)
        assert not task.done()                    # a handler error does not stop the reader
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    run(main())


def test_follower_write_failure_delays_only_that_partition(tmp_path: Path) -> None:
    from tests.unit.broker.replication.replication_fakes import FakeCluster

    async def main() -> None:
        c = FakeCluster(tmp_path / "c", ids=(1, 2))
        c.elect(1)
        assert (await c.nodes[1].replicas.appends.append_records(1, 1000, {T0: batch(2)}))[T0].error == 0
        follower = c.nodes[2]
        reported: list[str] = []
        follower.logs.on_dir_failure = lambda d, _what, _e: reported.append(d)
        with FailingDir(follower.dir, errno.EIO) as disk:
            disk.fail()
            assert await follower.fetch_round()          # no exception out of the round
        (fetcher,) = follower.fetchers.fetchers.values()
        state = fetcher.partitions[T0]
        assert state.delayed_until_ms > c.clock.now_ms   # backed off, as KAFKA_STORAGE_ERROR
        assert reported == [str(follower.dir)]
        assert follower.partition().log_end_offset == 0
    run(main())
