"""Recovery: torn, zeroed and garbage tails, corrupt and missing indexes, leftovers."""

from __future__ import annotations

import os

from protocol import records as R
from storage import filenames
from storage.config import LogConfig
from storage.log import PartitionLog

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=200, segment_index_bytes=4096)


def build(dir_path: str, batches: int = 60, close: bool = True,
          config: LogConfig = CONFIG) -> PartitionLog:
    log = PartitionLog.open(dir_path, config, clock=lambda: 5)
    for i in range(batches):
        log.append(R.build_batch([(b"k%d" % i, b"v" * 90, 1000 + i), (None, b"w", 1000 + i)]),
                   leader_epoch=i // 20)
    if close:
        log.close()
    return log


def all_offsets(log: PartitionLog) -> list[int]:
    log.update_high_watermark(log.log_end_offset)
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).slice.read()
        got = [r.offset for r in R.iter_all_records(data) if r.offset >= offset]
        assert got, offset
        out += got
        offset = got[-1] + 1
    return out


def last_log(dir_path: str) -> str:
    return sorted(os.path.join(dir_path, n) for n in os.listdir(dir_path) if n.endswith(".log"))[-1]


def test_truncated_tail_is_cut(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    path = last_log(d)
    os.truncate(path, os.path.getsize(path) - 17)  # tear the last batch
    log = PartitionLog.open(d, CONFIG)
    assert log.log_end_offset == 118  # the last 2-record batch is gone
    assert all_offsets(log) == list(range(118))
    assert log.last_load is not None and log.last_load.truncated_bytes > 0
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 40), (2, 80)]


def test_crash_without_close_recovers_everything(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    old = build(d, close=False)  # "killed": the active segment was never sealed
    log = PartitionLog.open(d, CONFIG)
    del old
    assert log.log_end_offset == 120
    assert all_offsets(log) == list(range(120))


def test_crash_leaves_zeroed_preallocated_tail(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    config = LogConfig(segment_bytes=4000, index_interval_bytes=200, segment_index_bytes=4096,
                       preallocate=True)
    old = build(d, close=False, config=config)  # "killed": active .log at its preallocated size
    assert os.path.getsize(last_log(d)) == config.segment_bytes
    log = PartitionLog.open(d, config)
    del old
    assert log.log_end_offset == 120
    assert all_offsets(log) == list(range(120))


def test_zeroed_middle_of_tail(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    path = last_log(d)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size - 300)
        f.write(b"\x00" * 300)
    log = PartitionLog.open(d, CONFIG)
    assert 110 <= log.log_end_offset < 120
    assert all_offsets(log) == list(range(log.log_end_offset))


def test_garbage_appended_is_cut(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    path = last_log(d)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(os.urandom(5000))
    log = PartitionLog.open(d, CONFIG)
    assert log.log_end_offset == 120 and os.path.getsize(path) >= size
    assert all_offsets(log) == list(range(120))
    log.close()
    assert os.path.getsize(path) == size


def test_valid_looking_batch_with_bad_crc_in_middle_segment_drops_later_segments(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    logs = sorted(n for n in os.listdir(d) if n.endswith(".log"))
    assert len(logs) >= 3
    middle = os.path.join(d, logs[1])
    with open(middle, "r+b") as f:
        f.seek(os.path.getsize(middle) - 5)
        f.write(b"XXXXX")
    log = PartitionLog.open(d, CONFIG)
    assert len(log.segments) == 2
    assert all_offsets(log) == list(range(log.log_end_offset))


def test_corrupt_and_missing_indexes_are_rebuilt(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    logs = sorted(n[:-4] for n in os.listdir(d) if n.endswith(".log"))
    good = open(os.path.join(d, logs[0] + ".index"), "rb").read()
    assert len(good) >= 8 and len(good) % 8 == 0
    with open(os.path.join(d, logs[0] + ".index"), "ab") as f:
        f.write(b"\x07\x07\x07")  # not whole entries
    os.unlink(os.path.join(d, logs[1] + ".index"))
    os.unlink(os.path.join(d, logs[1] + ".timeindex"))
    log = PartitionLog.open(d, CONFIG, clean_shutdown=True)  # lazy path
    assert log.last_load is not None and log.last_load.recovered_segments == 0
    assert all_offsets(log) == list(range(120))
    assert log.offset_for_timestamp(1030) == (60, 1030)
    assert open(os.path.join(d, logs[0] + ".index"), "rb").read() == good
    assert os.path.exists(os.path.join(d, logs[1] + ".index"))
    log.close()
    # and through recovery (no clean shutdown): index of the active segment rebuilt too
    os.unlink(os.path.join(d, logs[-1] + ".index"))
    log = PartitionLog.open(d, CONFIG, recovery_point=0)
    assert all_offsets(log) == list(range(120))


def test_clean_shutdown_skips_recovery(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    log = PartitionLog.open(d, CONFIG, clean_shutdown=True)
    assert log.last_load is not None and log.last_load.recovered_segments == 0
    assert log.recovery_point == log.log_end_offset == 120
    log.close()
    log = PartitionLog.open(d, CONFIG, recovery_point=60)
    assert log.last_load is not None
    assert 0 < log.last_load.recovered_segments < len(log.segments)


def test_leftover_files_handled_like_kafka(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    logs = sorted(n[:-4] for n in os.listdir(d) if n.endswith(".log"))
    first, second = logs[0], logs[1]
    # a finished compaction swap of segments 0 and 1 into one file
    merged = open(os.path.join(d, first + ".log"), "rb").read() + open(os.path.join(d, second + ".log"), "rb").read()
    open(os.path.join(d, first + ".log.swap"), "wb").write(merged)
    open(os.path.join(d, first + ".index.swap"), "wb").write(b"junk")
    open(os.path.join(d, "00000000000000000999.log.deleted"), "wb").write(b"junk")
    open(os.path.join(d, "00000000000000000998.log.cleaned"), "wb").write(b"junk")  # above the swap
    open(os.path.join(d, "00000000000000000997.index"), "wb").write(b"")  # orphan index
    log = PartitionLog.open(d, CONFIG, clean_shutdown=True)
    names = os.listdir(d)
    assert not [n for n in names if n.endswith((".swap", ".deleted", ".cleaned"))]
    assert "00000000000000000997.index" not in names
    assert second + ".log" not in names  # replaced by the swap
    assert [s.base_offset for s in log.segments][0] == int(first)
    assert all_offsets(log) == list(range(120))


def test_incomplete_swap_is_discarded(tmp_path: object) -> None:
    d = os.path.join(str(tmp_path), "t-0")
    build(d)
    first = sorted(n[:-4] for n in os.listdir(d) if n.endswith(".log"))[0]
    open(os.path.join(d, first + ".log.cleaned"), "wb").write(b"partial")
    open(os.path.join(d, first + ".log.swap"), "wb").write(b"partial")
    log = PartitionLog.open(d, CONFIG, clean_shutdown=True)
    assert not [n for n in os.listdir(d) if n.endswith((".swap", ".cleaned"))]
    assert all_offsets(log) == list(range(120))


def test_filenames() -> None:
    assert filenames.filename_prefix(170410) == "00000000000000170410"
    assert filenames.parse_base_offset("/x/00000000000000170410.log.deleted") == 170410
    assert filenames.parse_partition_dir("my-topic-12") == ("my-topic", 12)


def test_new_epoch_is_written_unsynced_and_synced_before_the_recovery_point_moves(
        tmp_path: object, monkeypatch: object) -> None:
    """assign (append path) writes the leader-epoch checkpoint without fsync; flush
    fsyncs it before advancing the recovery point past its entries."""
    from storage import checkpoints
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", fsync)  # type: ignore[attr-defined]
    d = os.path.join(str(tmp_path), "t-0")
    log = PartitionLog.open(d, CONFIG)
    epoch_file = os.path.join(d, filenames.LEADER_EPOCH_CHECKPOINT)
    log.append(R.build_batch([(None, b"a", 1)]), leader_epoch=3)
    assert checkpoints.read_epochs(epoch_file) == [(3, 0)]         # written ...
    assert epoch_file not in synced                                # ... not fsync'd
    log.flush()
    assert epoch_file in synced and log.recovery_point == 1
    first_log_sync = min(i for i, p in enumerate(synced) if p.endswith(".log"))
    assert synced.index(epoch_file) < first_log_sync


def test_an_unsynced_epoch_lost_in_a_crash_is_rebuilt_by_recovery(tmp_path: object) -> None:
    """The crash loses the checkpoint written after the last flush (the file is back
    to its synced content); the entries it held start at or above the recovery
    point, and recovery re-reads them from the batches."""
    from storage import checkpoints
    d = os.path.join(str(tmp_path), "t-0")
    log = PartitionLog.open(d, CONFIG)
    for i in range(30):
        log.append(R.build_batch([(None, b"v" * 90, 1000 + i)]), leader_epoch=i // 10)
        if i == 12:
            log.flush()                      # recovery point 13: epochs 0 and 1 durable
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 10), (2, 20)]
    epoch_file = os.path.join(d, filenames.LEADER_EPOCH_CHECKPOINT)
    checkpoints.write_epochs(epoch_file, [(0, 0), (1, 10)])   # what the disk kept
    del log                                  # killed: no close, no clean-shutdown marker
    again = PartitionLog.open(d, CONFIG, recovery_point=13)
    assert again.log_end_offset == 30
    assert again.leader_epoch_cache.entries() == [(0, 0), (1, 10), (2, 20)]


def test_recovery_keeps_an_epoch_that_began_before_the_recovery_point(tmp_path: object) -> None:
    """kill -9 (the checkpoint file intact, in the page cache, epoch 2 in it) with the
    recovery point in the segment from 13 on, inside epoch 1 (from 10): recovery
    must not re-start epoch 1 at its first recovered batch (that moved "epoch 1
    starts at 10" up to 13, and OffsetForLeaderEpoch(0) answered 13; found by
    tests/fault/net_campaign.py)."""
    d = os.path.join(str(tmp_path), "t-0")
    log = PartitionLog.open(d, CONFIG)
    for i in range(30):
        log.append(R.build_batch([(None, b"v" * 90, 1000 + i)]), leader_epoch=i // 10)
        if i == 12:
            log.roll()                       # a segment from 13 on
        if i == 14:
            log.flush()                      # recovery point 15
    assert [s.base_offset for s in log.segments][:2] == [0, 13]
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 10), (2, 20)]
    del log                                  # killed: no close, no clean-shutdown marker
    again = PartitionLog.open(d, CONFIG, recovery_point=15)
    assert again.log_end_offset == 30
    assert again.leader_epoch_cache.entries() == [(0, 0), (1, 10), (2, 20)]
    assert again.leader_epoch_cache.end_offset_for(0, 30) == (0, 10)
