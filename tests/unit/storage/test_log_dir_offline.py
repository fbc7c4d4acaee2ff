"""Storage's side of KIP-112: an OSError on any write path takes the whole log dir
offline through one sink (storage/io_guard.py, LogManager.report_failure); logs of
an offline dir refuse writes, get nothing written at shutdown, and are recovered
at the next start. FailingDir stands in for the failing disk."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from protocol.records import build_batch
from storage import filenames
from storage.config import LogConfig
from storage.io_guard import LogDirOfflineError
from storage.log import PartitionLog
from storage.log_manager import LogManager, NoLiveLogDirError

from tests.unit.storage.failing_dir import FailingDir

CFG = LogConfig(segment_bytes=4096, index_interval_bytes=64)


def batch(n: int = 1, size: int = 40) -> bytearray:
    return build_batch([(b"k", b"v" * size, 1_700_000_000_000 + i) for i in range(n)])


class Reports:
    """The LogManager's on_dir_failure: what the broker's failure channel would get."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str, OSError]] = []

    def __call__(self, log_dir: str, what: str, error: OSError) -> None:
        self.got.append((log_dir, what, error))

    @property
    def dirs(self) -> list[str]:
        return [d for d, _, _ in self.got]


def two_dirs(tmp_path: Path, reports: Reports | None = None) -> tuple[LogManager, str, str]:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    m = LogManager([a, b], CFG, on_dir_failure=reports)
    m.startup(broker_id=1)
    m.get_or_create_log("t", 0)      # the dir with fewest logs: a
    m.get_or_create_log("t", 1)      # then b
    m.get_or_create_log("t", 2)      # a again
    assert (m.dir_of("t", 0), m.dir_of("t", 1), m.dir_of("t", 2)) == (a, b, a)
    return m, a, b


@pytest.mark.parametrize("code", [errno.EROFS, errno.EIO, errno.ENOSPC, errno.EACCES])
def test_failed_append_takes_the_whole_dir_offline(tmp_path: Path, code: int) -> None:
    reports = Reports()
    m, a, b = two_dirs(tmp_path, reports)
    t0, t1, t2 = m.get_log("t", 0), m.get_log("t", 1), m.get_log("t", 2)
    for plog in (t0, t1, t2):
        plog.append(batch(3))
    with FailingDir(a, code) as disk:
        disk.fail()
        with pytest.raises(OSError) as failed:
            t0.append(batch(2))
        assert failed.value.errno == code
        assert t0.log_end_offset == 3              # nothing past what reached the file
        assert reports.dirs == [a] and m.offline_dirs.keys() == {a}
        assert m.live_log_dirs == [b]
        refused = dict(disk.calls)
        # the other log of the dir refuses at once, without touching the disk
        with pytest.raises(LogDirOfflineError):
            t2.append(batch())
        with pytest.raises(LogDirOfflineError):
            t2.flush()
        assert disk.calls == refused
        assert t1.append(batch()).first_offset == 3      # the other dir goes on
    assert reports.dirs == [a]                            # reported once


def test_short_write_then_enospc_leaves_the_log_end_where_it_was(tmp_path: Path) -> None:
    reports = Reports()
    m, a, _b = two_dirs(tmp_path, reports)
    t0 = m.get_log("t", 0)
    t0.append(batch(3))
    size = t0.active_segment.size
    with FailingDir(a, errno.ENOSPC, short_write=True) as disk:
        disk.fail()
        with pytest.raises(OSError) as failed:
            t0.append(batch(2, size=200))
    assert failed.value.errno == errno.ENOSPC
    assert (t0.log_end_offset, t0.active_segment.size) == (3, size)
    assert os.path.getsize(t0.active_segment.log_path) > size     # the torn bytes are there
    assert reports.dirs == [a]


def test_failed_index_write_restores_the_segment_end(tmp_path: Path) -> None:
    m, a, _b = two_dirs(tmp_path, Reports())
    t0 = m.get_log("t", 0)
    seg = t0.active_segment
    real = seg._index_batch
    calls = []

    def failing(*args: int) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "index page")
        real(*args)
    seg._index_batch = failing  # type: ignore[method-assign]
    data = batch(1) + batch(1) + batch(1)
    with pytest.raises(OSError):
        t0.append(data)
    assert t0.log_end_offset == 0 and seg.size == 0
    assert m.offline_dirs.keys() == {a}


@pytest.mark.parametrize("step", ["flush", "roll", "truncate", "retention", "epoch", "metadata",
                                  "snapshot"])
def test_every_write_path_reports(tmp_path: Path, step: str) -> None:
    reports = Reports()
    m, a, _b = two_dirs(tmp_path, reports)
    t0 = m.get_log("t", 0)
    t0.snapshot_source = lambda: []
    for _ in range(5):
        t0.append(batch(4, size=200))
    t0.update_high_watermark(t0.log_end_offset)
    t0.config = LogConfig(segment_bytes=4096, retention_bytes=1)
    actions = {
        "flush": lambda: t0.flush(),
        "roll": lambda: t0.roll(),
        "truncate": lambda: t0.truncate_to(2),
        "retention": lambda: t0.delete_old_segments(),
        "epoch": lambda: t0.assign_leader_epoch(7, t0.log_end_offset),
        "metadata": lambda: t0.write_partition_metadata("AAAAAAAAAAAAAAAAAAAAAA"),
        "snapshot": lambda: t0.close(),
    }
    with FailingDir(a, errno.EIO) as disk:
        disk.fail()
        with pytest.raises(OSError):
            actions[step]()
    assert reports.dirs == [a], step


def test_checkpoint_failure_takes_only_that_dir_offline(tmp_path: Path) -> None:
    reports = Reports()
    m, a, b = two_dirs(tmp_path, reports)
    for tp in (("t", 0), ("t", 1)):
        m.get_log(*tp).append(batch(2))
        m.get_log(*tp).update_high_watermark(2)
    with FailingDir(a, errno.EROFS) as disk:
        disk.fail()
        m.checkpoint_all()                     # no exception: the periodic task goes on
    assert reports.dirs == [a]
    hw_b = open(os.path.join(b, filenames.REPLICATION_CHECKPOINT)).read()
    assert "t 1 2" in hw_b
    m.flush_dirty_logs()                       # the periodic tasks skip offline logs
    m.cleanup_logs()
    assert m.get_log("t", 0).segments[0].size > 0       # retention did not touch dir a


def test_offline_dir_gets_nothing_at_shutdown_and_is_recovered(tmp_path: Path) -> None:
    reports = Reports()
    m, a, b = two_dirs(tmp_path, reports)
    t0 = m.get_log("t", 0)
    t0.append(batch(3))
    t0.flush()
    m.checkpoint_all()
    before = {n: open(os.path.join(a, n)).read() for n in
              (filenames.RECOVERY_POINT_CHECKPOINT, filenames.REPLICATION_CHECKPOINT)}
    with FailingDir(a, errno.ENOSPC, short_write=True) as disk:
        disk.fail()
        with pytest.raises(OSError):
            t0.append(batch(2, size=300))       # torn: half of it reaches the file
    # the broker's handler: close the dir's logs without writing
    assert sorted(m.take_dir_offline(a)) == [("t", 0), ("t", 2)]
    assert m.get_log("t", 0) is None and t0.offline
    m.get_log("t", 1).append(batch())
    m.shutdown()
    assert not os.path.exists(os.path.join(a, filenames.CLEAN_SHUTDOWN))
    assert os.path.exists(os.path.join(b, filenames.CLEAN_SHUTDOWN))
    after = {n: open(os.path.join(a, n)).read() for n in before}
    assert after == before
    # the disk is fixed, the broker restarts: dir a is recovered, the torn batch cut
    again = LogManager([a, b], CFG)
    again.startup(broker_id=1)
    assert again.had_clean_shutdown == {a: False, b: True}
    assert not again.offline_dirs
    t0 = again.get_log("t", 0)
    assert t0.log_end_offset == 3
    assert t0.last_load is not None and t0.last_load.truncated_bytes > 0
    assert t0.append(batch()).first_offset == 3


def test_unusable_dir_at_startup_is_offline_from_the_start(tmp_path: Path) -> None:
    good = str(tmp_path / "good")
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    bad = str(blocker / "logs")                 # cannot be created: ENOTDIR
    reports = Reports()
    m = LogManager([bad, good], CFG, on_dir_failure=reports)
    m.startup(broker_id=1)
    assert m.live_log_dirs == [good] and reports.dirs == [bad]
    assert "NotADirectoryError" in m.offline_dirs[bad] or "Not a directory" in m.offline_dirs[bad]
    # KIP-112: a partition the controller created earlier is not recreated empty
    with pytest.raises(LogDirOfflineError):
        m.get_or_create_log("old", 0)
    assert m.get_or_create_log("new", 0, is_new=True).dir.startswith(good)
    m.shutdown()
    assert os.path.exists(os.path.join(good, filenames.CLEAN_SHUTDOWN))


def test_read_only_dir_with_logs_at_startup(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    m = LogManager([a, b], CFG)
    m.startup(broker_id=1)
    m.get_or_create_log("t", 0).append(batch(2))
    m.get_or_create_log("t", 1).append(batch(2))
    m.shutdown()
    with FailingDir(a, errno.EROFS) as disk:
        disk.fail()
        m2 = LogManager([a, b], CFG)
        m2.startup(broker_id=1)
        assert m2.live_log_dirs == [b] and m2.get_log("t", 0) is None
        assert m2.get_log("t", 1) is not None and m2.get_log("t", 1).log_end_offset == 2
        m2.shutdown()
    assert os.path.exists(os.path.join(a, filenames.CLEAN_SHUTDOWN))   # untouched since


def test_no_usable_dir_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    m = LogManager([str(blocker / "a"), str(blocker / "b")], CFG)
    with pytest.raises(NoLiveLogDirError, match="none of the log dirs"):
        m.startup(broker_id=1)


def test_report_from_another_thread_is_reported_once(tmp_path: Path) -> None:
    reports = Reports()
    m, a, _b = two_dirs(tmp_path, reports)
    errors = [OSError(errno.EIO, "x") for _ in range(8)]
    threads = [threading.Thread(target=m.report_failure, args=(a, "cleaner", e)) for e in errors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert reports.dirs == [a]
    assert m.get_log("t", 0).offline and m.get_log("t", 2).offline
    assert not m.get_log("t", 1).offline


def test_a_log_without_a_manager_just_raises(tmp_path: Path) -> None:
    plog = PartitionLog.open(str(tmp_path / "t-0"), CFG)
    with FailingDir(tmp_path, errno.EROFS) as disk:
        disk.fail()
        with pytest.raises(OSError):
            plog.append(batch())
    assert not plog.offline
    assert plog.append(batch()).first_offset == 0


def test_move_to_an_offline_dir_is_refused(tmp_path: Path) -> None:
    m, a, b = two_dirs(tmp_path, Reports())
    m.report_failure(b, "test", OSError(errno.EIO, "x"))
    with pytest.raises(LogDirOfflineError):
        m.move_log("t", 0, b)
    assert m.dir_of("t", 0) == a


def test_a_cleaner_failure_takes_the_dir_offline(tmp_path: Path) -> None:
    from storage import cleaner as C
    reports = Reports()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    compact = LogConfig(segment_bytes=1200, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
    m = LogManager([a, b], compact, on_dir_failure=reports)
    m.startup(broker_id=1)
    plog = m.get_or_create_log("c", 0)
    for i in range(40):
        plog.append(build_batch([(b"k%d" % (i % 3), b"v" * 30, 1_000 + i)]), leader_epoch=0)
    plog.update_high_watermark(plog.log_end_offset)
    assert len(plog.segments) > 2
    cleaner = C.LogCleaner(m)
    with FailingDir(a if m.dir_of("c", 0) == a else b, errno.ENOSPC) as disk:
        disk.fail()
        with pytest.raises(OSError):
            cleaner.clean_once(10_000_000)
    assert reports.dirs == [m.dir_of("c", 0)]
