"""LogSegment.append writes the bytes Kafka's leader and follower would: the request's
batches with baseOffset and partitionLeaderEpoch patched (header copies written with
pwritev beside the untouched record bytes), or with LogAppendTime set and re-CRCed
(a patched copy). Checked against patching a copy of the whole data by hand, for
requests of several batches; the caller's data is never changed."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from protocol import records as R
from storage.config import LogConfig
from storage.log import PartitionLog

CONFIG = LogConfig(segment_bytes=10_000_000, index_interval_bytes=300, retention_ms=-1)


def _request(rng: random.Random, batches: int) -> bytes:
    return b"".join(R.build_batch([(b"k%d" % i, bytes(rng.randrange(0, 400)), 1_000 + i)
                                   for i in range(rng.randint(1, 6))])
                    for _ in range(batches))


@pytest.mark.parametrize("seed", range(4))
def test_leader_appends_write_the_patched_batches(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    log = PartitionLog.open(str(tmp_path / "p-0"), CONFIG, clock=lambda: 5_000)
    expected = bytearray()
    for _ in range(30):
        data = _request(rng, rng.randint(1, 4))
        before = bytes(data)
        epoch = rng.randrange(0, 50)
        first = log.log_end_offset
        log.append(data, leader_epoch=epoch)
        assert data == before
        want = bytearray(data)
        offset = first
        for pos, header in R.iter_batches(data):
            R.patch_base_offset(want, pos, offset)
            R.patch_leader_epoch(want, pos, epoch)
            offset += header.last_offset_delta + 1
        expected += want
    log.flush()
    with open(log.active_segment.log_path, "rb") as f:
        written = f.read()
    assert written == bytes(expected)
    assert all(R.crc_ok(written, p, h) for p, h in R.iter_batches(written))
    assert os.path.getsize(log.active_segment.log_path) == len(expected)


def test_follower_appends_write_the_data_as_it_came(tmp_path: Path) -> None:
    rng = random.Random(7)
    leader = PartitionLog.open(str(tmp_path / "l-0"), CONFIG, clock=lambda: 5_000)
    for _ in range(10):
        leader.append(_request(rng, 3), leader_epoch=4)
    leader.flush()
    with open(leader.active_segment.log_path, "rb") as f:
        data = f.read()
    follower = PartitionLog.open(str(tmp_path / "f-0"), CONFIG, clock=lambda: 5_000)
    follower.append(data, assign_offsets=False)
    follower.flush()
    with open(follower.active_segment.log_path, "rb") as f:
        assert f.read() == data


def test_log_append_time_batches_are_restamped_and_recrced(tmp_path: Path) -> None:
    rng = random.Random(3)
    config = LogConfig(segment_bytes=10_000_000, index_interval_bytes=300, retention_ms=-1,
                       message_timestamp_type="LogAppendTime")
    log = PartitionLog.open(str(tmp_path / "p-0"), config, clock=lambda: 9_999)
    data = _request(rng, 3)
    before = bytes(data)
    log.append(data, leader_epoch=2)
    assert data == before
    log.flush()
    with open(log.active_segment.log_path, "rb") as f:
        written = f.read()
    headers = list(R.iter_batches(written))
    assert len(headers) == 3 and len(written) == len(data)
    assert all(h.max_timestamp == 9_999 and h.partition_leader_epoch == 2
               and R.crc_ok(written, p, h) for p, h in headers)
