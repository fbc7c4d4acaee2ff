"""LogManager.move_log (AlterReplicaLogDirs) and the start-up settling of
interrupted moves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol import records as R
from storage import filenames
from storage.config import LogConfig
from storage.log_manager import LogManager


def batch(i: int) -> bytearray:
    return R.build_batch([(b"k%d" % i, b"v" * 100, 1_000 + i)])


def everything(log: object) -> bytes:
    return log.read(0, 1 << 20).slice.read()  # type: ignore[attr-defined]


def manager(a: Path, b: Path) -> LogManager:
    m = LogManager([str(a), str(b)], LogConfig(segment_bytes=600))
    m.startup(broker_id=1, cluster_id="c")
    return m


def test_move_log_keeps_the_object_the_data_and_the_offsets(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    m = manager(a, b)
    log = m.get_or_create_log("t", 0)
    src = m.dir_of("t", 0)
    dst = str(b) if src == str(a) else str(a)
    for i in range(10):
        log.append(batch(i))
    log.update_high_watermark(7)
    before, segments = everything(log), len(log.segments)
    assert segments > 1

    assert m.move_log("t", 0, dst) is True
    assert m.get_log("t", 0) is log and m.dir_of("t", 0) == dst
    assert log.dir == os.path.join(dst, "t-0") and os.path.isdir(log.dir)
    assert not os.path.exists(os.path.join(src, "t-0"))
    assert [n for n in os.listdir(src) + os.listdir(dst)
            if n.endswith((filenames.FUTURE_DIR_SUFFIX, filenames.DELETE_DIR_SUFFIX))] == []
    assert everything(log) == before and len(log.segments) == segments
    assert log.high_watermark == 7 and log.log_end_offset == 10
    log.append(batch(10))                       # still writable, in the new dir
    assert log.log_end_offset == 11

    assert m.move_log("t", 0, dst) is False     # already there: a no-op
    m.shutdown()
    again = manager(a, b)
    assert again.dir_of("t", 0) == dst
    assert again.get_log("t", 0).log_end_offset == 11  # type: ignore[union-attr]
    again.shutdown()


def test_move_log_refuses_unknown_dirs_and_logs(tmp_path: Path) -> None:
    m = manager(tmp_path / "a", tmp_path / "b")
    m.get_or_create_log("t", 0)
    with pytest.raises(ValueError):
        m.move_log("t", 0, str(tmp_path / "elsewhere"))
    with pytest.raises(KeyError):
        m.move_log("t", 1, str(tmp_path / "b"))
    m.shutdown()


def test_startup_settles_interrupted_moves(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    m = manager(a, b)
    for p in (0, 1):
        m.get_or_create_log("t", p).append(batch(p))
    dirs = {p: m.dir_of("t", p) for p in (0, 1)}
    m.shutdown()
    other = {p: str(b) if d == str(a) else str(a) for p, d in dirs.items()}
    # t-0: crashed after the copy (live dir still there) -> the copy is dropped.
    os.makedirs(os.path.join(other[0], "t-0.abc-future"))
    # t-1: crashed after retiring the old dir -> the copy becomes the log.
    os.replace(os.path.join(dirs[1], "t-1"), os.path.join(other[1], "t-1.def-future"))
    again = manager(a, b)
    assert again.dir_of("t", 0) == dirs[0]
    assert again.dir_of("t", 1) == other[1]
    assert again.get_log("t", 1).log_end_offset == 1  # type: ignore[union-attr]
    assert not any(n.endswith(filenames.FUTURE_DIR_SUFFIX)
                   for d in (a, b) for n in os.listdir(d))
    again.shutdown()
