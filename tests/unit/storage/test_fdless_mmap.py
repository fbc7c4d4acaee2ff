"""FdlessMap: a shared mapping that keeps no descriptor, and what the storage
layer's descriptor budget is with it (one per open segment)."""

from __future__ import annotations

import os
import struct

import pytest

from protocol import records as R
from storage.config import LogConfig
from storage.fdless_mmap import FdlessMap
from storage.log import PartitionLog


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_writes_reach_the_file_and_a_fresh_map(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "f")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 8192)
    before = open_fds()
    m = FdlessMap(fd, 8192, writable=True)
    os.close(fd)
    assert open_fds() == before - 1          # the map holds no descriptor of its own
    struct.pack_into(">qi", m.buffer, 4096, 123456789012, -7)
    m.flush()
    with open(path, "rb") as f:
        f.seek(4096)
        assert struct.unpack(">qi", f.read(12)) == (123456789012, -7)
    fd = os.open(path, os.O_RDONLY)
    again = FdlessMap(fd, 8192, writable=False)
    os.close(fd)
    assert struct.unpack_from(">qi", again.buffer, 4096) == (123456789012, -7)
    assert len(again) == 8192
    m.close()
    m.close()                                # idempotent
    assert m.buffer is None
    again.close()


def test_read_only_map_is_not_writable_and_bad_maps_raise(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "f")
    with open(path, "wb") as f:
        f.write(b"\x01" * 4096)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError):           # PROT_WRITE on an O_RDONLY fd: EACCES
            FdlessMap(fd, 4096, writable=True)
        with pytest.raises(ValueError):
            FdlessMap(fd, 0, writable=False)
        m = FdlessMap(fd, 4096, writable=False)
    finally:
        os.close(fd)
    with pytest.raises(TypeError):             # read-only buffer
        struct.pack_into("b", m.buffer, 0, 2)
    assert struct.unpack_from("b", m.buffer, 0) == (1,)
    m.close()
    with pytest.raises(OSError):
        FdlessMap(-1, 4096, writable=False)     # EBADF


def test_one_descriptor_per_partition(tmp_path: object) -> None:
    """50 partitions with an active segment each, written and read: 50 fds
    (one per .log), not the 4-5 that a write fd, a read fd and three CPython
    maps made — which put 10,000 partitions past a 20,000-fd limit."""
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100)
    before = open_fds()
    logs = []
    for i in range(50):
        log = PartitionLog.open(os.path.join(str(tmp_path), f"t-{i}"), config)
        for j in range(5):
            log.append(R.build_batch([(None, b"v" * 200, 1000 + j)]), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
        assert log.read(0, 1 << 20).slice.read()
        logs.append(log)
    assert open_fds() - before <= 50 + 5
    for log in logs:
        log.close()
    assert open_fds() - before <= 5
