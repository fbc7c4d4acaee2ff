"""Roll/retention/flush by time (fake clock), leader epochs, checkpoints, LogManager."""

from __future__ import annotations

import os

import pytest

from protocol import records as R
from storage import checkpoints, filenames
from storage.config import LogConfig
from storage.leader_epoch import LeaderEpochCache
from storage.log import PartitionLog, UnexpectedAppendOffsetError
from storage.log_manager import InconsistentMetaPropertiesError, LogManager


class Clock:
    def __init__(self) -> None:
        self.now = 10_000_000

    def __call__(self) -> int:
        return self.now


def batch(ts: int, n: int = 1, size: int = 50) -> bytearray:
    return R.build_batch([(b"k", b"v" * size, ts)] * n)


def test_roll_by_time_and_size(tmp_path: object) -> None:
    clock = Clock()
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"),
                            LogConfig(segment_ms=1000, segment_bytes=1000), clock=clock)
    log.append(batch(5000))
    log.append(batch(5900))
    assert len(log.segments) == 1
    log.append(batch(6001))  # 1001 ms after the first batch's timestamp
    assert [s.base_offset for s in log.segments] == [0, 2]
    for i in range(10):
        log.append(batch(6001))
    assert all(s.size <= 1000 for s in log.segments) and len(log.segments) >= 3


def test_roll_when_index_full(tmp_path: object) -> None:
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"),
                            LogConfig(index_interval_bytes=1, segment_index_bytes=8 * 4))
    for i in range(20):
        log.append(batch(i))
    assert len(log.segments) > 3
    assert all(s.offset_index.entries <= 4 for s in log.segments)


def test_retention_by_time_and_size_respects_high_watermark(tmp_path: object) -> None:
    clock = Clock()
    cfg = LogConfig(segment_bytes=500, retention_ms=60_000)
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), cfg, clock=clock)
    now = clock.now
    for i in range(20):
        log.append(batch(now - 120_000 + i * 1000))  # old records
    for i in range(5):
        log.append(batch(now))
    log.update_high_watermark(0)
    assert log.delete_old_segments() == 0  # nothing below the high watermark
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    assert all(s.max_timestamp >= now - 60_000 for s in log.segments)
    assert log.log_start_offset == log.segments[0].base_offset > 0
    clock.now += 10**9  # everything expires: the log rolls and keeps an empty active segment
    log.delete_old_segments()
    assert len(log.segments) == 1 and log.log_start_offset == log.log_end_offset == 25
    size_log = PartitionLog.open(os.path.join(str(tmp_path), "s-0"),
                                 LogConfig(segment_bytes=500, retention_bytes=1200, retention_ms=-1))
    for i in range(40):
        size_log.append(batch(i))
    size_log.update_high_watermark(size_log.log_end_offset)
    size_log.delete_old_segments()
    assert size_log.size_in_bytes <= 1200 + 500


def test_delete_records_moves_log_start_and_retention_follows(tmp_path: object) -> None:
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), LogConfig(segment_bytes=500))
    for i in range(20):
        log.append(batch(i))
    log.update_high_watermark(15)
    with pytest.raises(Exception):
        log.maybe_increment_log_start_offset(16)
    assert log.maybe_increment_log_start_offset(12)
    log.delete_old_segments()
    assert log.segments[0].base_offset <= 12 < (log.segments[1].base_offset if len(log.segments) > 1 else 99)
    assert log.log_start_offset == 12


def test_flush_policy_by_messages_and_time(tmp_path: object) -> None:
    clock = Clock()
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"),
                            LogConfig(flush_interval_messages=3, flush_interval_ms=500), clock=clock)
    log.append(batch(1))
    log.append(batch(1))
    assert log.recovery_point == 0
    log.append(batch(1))
    assert log.recovery_point == 3
    log.append(batch(1))
    assert not log.maybe_flush()
    clock.now += 501
    assert log.maybe_flush() and log.recovery_point == 4
    default = PartitionLog.open(os.path.join(str(tmp_path), "d-0"), LogConfig(), clock=clock)
    for _ in range(100):
        default.append(batch(1))
    clock.now += 10**9
    assert not default.maybe_flush() and default.recovery_point == 0  # page cache by default


def test_log_append_time_and_follower_append(tmp_path: object) -> None:
    clock = Clock()
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"),
                            LogConfig(message_timestamp_type="LogAppendTime"), clock=clock)
    info = log.append(batch(1, n=3))
    assert info.log_append_time == clock.now and info.max_timestamp == clock.now
    log.update_high_watermark(3)
    data = log.read(0, 1000).slice.read()
    assert [r.timestamp for r in R.iter_all_records(data)] == [clock.now] * 3
    R.validate(data)  # CRC rewritten
    follower = PartitionLog.open(os.path.join(str(tmp_path), "f-0"))
    follower.append(data, assign_offsets=False)
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append(data, assign_offsets=False)
    gap = bytearray(data)
    R.patch_base_offset(gap, 0, 10)
    assert follower.append(gap, assign_offsets=False).first_offset == 10
    assert follower.log_end_offset == 13


def test_leader_epoch_cache(tmp_path: object) -> None:
    cache = LeaderEpochCache(str(tmp_path))
    cache.assign(0, 0)
    cache.assign(2, 10)
    cache.assign(2, 15)  # same epoch later: ignored
    cache.assign(5, 30)
    assert cache.entries() == [(0, 0), (2, 10), (5, 30)]
    assert cache.end_offset_for(5, 42) == (5, 42)
    assert cache.end_offset_for(2, 42) == (2, 30)
    assert cache.end_offset_for(3, 42) == (2, 30)
    assert cache.end_offset_for(6, 42) == (-1, -1)
    assert open(os.path.join(str(tmp_path), filenames.LEADER_EPOCH_CHECKPOINT)).read() == \
        "0\n3\n0 0\n2 10\n5 30\n"
    cache.assign(4, 20)  # a lower start offset rewrites the tail
    assert cache.entries() == [(0, 0), (2, 10), (4, 20)]
    cache.truncate_from_end(15)
    assert cache.entries() == [(0, 0), (2, 10)]
    cache.truncate_from_start(12)
    assert cache.entries() == [(2, 12)]
    assert LeaderEpochCache(str(tmp_path)).entries() == [(2, 12)]


def test_offset_checkpoint_format(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "cp")
    checkpoints.write_offsets(path, {("b", 1): 7, ("a", 0): 42})
    assert open(path).read() == "0\n2\na 0 42\nb 1 7\n"
    assert checkpoints.read_offsets(path) == {("a", 0): 42, ("b", 1): 7}
    open(path, "w").write("0\n3\na 0 42\n")
    with pytest.raises(checkpoints.CheckpointError):
        checkpoints.read_offsets(path)


def test_log_manager_lifecycle(tmp_path: object) -> None:
    dirs = [os.path.join(str(tmp_path), "d1"), os.path.join(str(tmp_path), "d2")]
    cfg = LogConfig(segment_bytes=600)
    mgr = LogManager(dirs, cfg)
    mgr.startup(broker_id=1, cluster_id="abc")
    logs = [mgr.get_or_create_log("topic", p, topic_id="AAAAAAAAAAAAAAAAAAAAAA") for p in range(4)]
    assert {mgr.dir_of("topic", p) for p in range(4)} == set(mgr.log_dirs)  # spread over dirs
    for log in logs:
        for i in range(10):
            log.append(batch(i))
        log.update_high_watermark(7)
    logs[0].maybe_increment_log_start_offset(3)
    mgr.shutdown()
    for d in dirs:
        assert os.path.exists(os.path.join(d, filenames.CLEAN_SHUTDOWN))
        meta = open(os.path.join(d, filenames.META_PROPERTIES)).read()
        assert "broker.id=1" in meta and "cluster.id=abc" in meta and "version=0" in meta
    mgr2 = LogManager(dirs, cfg)
    mgr2.startup(broker_id=1, cluster_id="abc")
    assert all(mgr2.had_clean_shutdown.values())
    assert not any(os.path.exists(os.path.join(d, filenames.CLEAN_SHUTDOWN)) for d in dirs)
    log = mgr2.get_log("topic", 0)
    assert log is not None
    assert (log.log_end_offset, log.high_watermark, log.log_start_offset) == (10, 7, 3)
    assert log.read_partition_metadata() == "AAAAAAAAAAAAAAAAAAAAAA"
    assert mgr2.delete_log("topic", 1)
    assert mgr2.get_log("topic", 1) is None
    assert not any(n.startswith("topic-1") for d in dirs for n in os.listdir(d))
    mgr2.checkpoint_all()
    cp = checkpoints.read_offsets(os.path.join(mgr2.dir_of("topic", 0) or "", filenames.REPLICATION_CHECKPOINT))
    assert cp[("topic", 0)] == 7
    # crash (no shutdown): the next startup recovers and sees no marker
    mgr2.get_or_create_log("topic", 0).append(batch(1))
    mgr3 = LogManager(dirs, cfg)
    mgr3.startup(broker_id=1, cluster_id="abc")
    assert not any(mgr3.had_clean_shutdown.values())
    assert mgr3.get_log("topic", 0).log_end_offset == 11  # type: ignore[union-attr]
    with pytest.raises(InconsistentMetaPropertiesError):
        LogManager(dirs, cfg).startup(broker_id=2, cluster_id="abc")


def test_deleting_the_log_of_a_longest_topic_name(tmp_path: object) -> None:
    """A 249-character topic (Kafka's longest): its ``-delete`` name is cut to fit 255
    bytes (the fuzzer's finding: the rename failed and took the log dir offline)."""
    topic = "t" * 249
    mgr = LogManager([os.path.join(str(tmp_path), "d")], LogConfig())
    mgr.startup(broker_id=1, cluster_id="abc")
    mgr.get_or_create_log(topic, 12345).append(batch(0))
    assert mgr.delete_log(topic, 12345)
    assert mgr.get_log(topic, 12345) is None and not mgr.offline_dirs
    name = filenames.delete_dir_name(topic, 12345, "0" * 32)
    assert len(name) == 255 and name.endswith("-12345." + "0" * 32 + "-delete")
    mgr.shutdown()


def test_config_from_properties() -> None:
    cfg = LogConfig.from_properties({"log.retention.hours": "1", "log.retention.ms": "5000",
                                     "log.segment.bytes": "1234", "log.roll.hours": "2",
                                     "unrelated": "x", "log.preallocate": "true"})
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.segment_ms, cfg.preallocate) == \
        (5000, 1234, 7_200_000, True)
    assert LogConfig().segment_bytes == 1 << 30 and LogConfig().index_interval_bytes == 4096


def test_log_creation_and_deletion_fsyncs_are_deferred_to_the_checkpoint(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: creating a log (its dir, partition.metadata) and detaching one fsync
    nothing on the caller's path (the event loop); the next checkpoint write fsyncs
    them first, files before dirs, and skips a path deleted meanwhile."""
    root = os.path.join(str(tmp_path), "logs")
    mgr = LogManager([root])
    mgr.startup()
    synced: list[str] = []
    monkeypatch.setattr(checkpoints, "fsync_path", lambda p: synced.append(os.path.abspath(p)))
    log = mgr.get_or_create_log("t", 0, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    mgr.get_or_create_log("u", 0)
    doomed = mgr.detach_log("u", 0)
    assert doomed is not None and synced == []          # nothing fsync'd on these paths
    mgr.checkpoint_high_watermarks()
    metadata = os.path.join(log.dir, filenames.PARTITION_METADATA)
    deferred = [p for p in synced if not p.endswith(filenames.REPLICATION_CHECKPOINT)]
    assert deferred[:3] == [os.path.abspath(metadata), os.path.abspath(log.dir),
                            os.path.abspath(root)]
    synced.clear()
    mgr.checkpoint_high_watermarks()                     # drained: only the checkpoint
    assert all(p.endswith(filenames.REPLICATION_CHECKPOINT) or p == os.path.abspath(root)
               for p in synced)
    assert os.path.abspath(log.dir) not in synced


def test_flush_observer_is_the_managers_for_every_log_it_holds(tmp_path: object) -> None:
    """The flush-time seam (the LogFlushRateAndTimeMs metric) belongs to the LogManager:
    set, it reaches the logs held and those created later; unset, none calls it; another
    manager's logs never see it (no process-wide hook)."""
    seen: list[float] = []
    mgr = LogManager([os.path.join(str(tmp_path), "a")], LogConfig())
    mgr.startup(broker_id=1, cluster_id="abc")
    other = LogManager([os.path.join(str(tmp_path), "b")], LogConfig())
    other.startup(broker_id=2, cluster_id="abc")
    before = mgr.get_or_create_log("t", 0)
    mgr.flush_observer = seen.append
    after = mgr.get_or_create_log("t", 1)
    stranger = other.get_or_create_log("t", 0)
    for log in (before, after, stranger):
        log.append(batch(1))
        log.flush()
    assert len(seen) == 2 and all(s >= 0 for s in seen)
    mgr.flush_observer = None
    before.append(batch(2))
    before.flush()
    assert len(seen) == 2
    mgr.shutdown()
    other.shutdown()
