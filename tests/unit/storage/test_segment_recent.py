"""LogSegment's run of recently appended batches (``_recent``): translate_offset answers
from it exactly what the scan from the sparse index answers, through appends of batches
of random sizes and offsets (leader and follower style), truncations and re-activation."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from protocol import records as R
from storage.config import LogConfig
from storage.log import PartitionLog

CONFIG = LogConfig(segment_bytes=1_000_000, index_interval_bytes=300, retention_ms=-1)


def _scan(log: PartitionLog, offset: int, start: int) -> object:
    seg = log.active_segment
    saved = list(seg._recent)
    seg._recent.clear()
    try:
        return seg.translate_offset(offset, start)
    finally:
        seg._recent.extend(saved)


@pytest.mark.parametrize("seed", range(6))
def test_recent_batches_answer_as_the_scan(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    log = PartitionLog.open(str(tmp_path / "p-0"), CONFIG, clock=lambda: 1_000)
    for step in range(400):
        if step % 97 == 96 and log.log_end_offset > 10:
            log.truncate_to(rng.randrange(log.log_end_offset // 2, log.log_end_offset))
        recs = [(None, bytes(rng.randrange(0, 120)), 1_000) for _ in range(rng.randint(1, 5))]
        log.append(R.build_batch(recs), leader_epoch=0)
        seg = log.active_segment
        assert seg._recent, "an append leaves its batch in the run"
        for _ in range(5):
            offset = rng.randrange(seg.base_offset, log.log_end_offset + 2)
            # callers start at a batch boundary (a position found before)
            start = rng.choice([0, 0, rng.choice(seg._recent)[1]])
            assert seg.translate_offset(offset, start) == _scan(log, offset, start), (
                step, offset, start)
    # the run is bounded, and still answers once its oldest batches fell off
    seg = log.active_segment
    assert 0 < len(seg._recent) <= 256
    tail = seg._recent[0][2].base_offset
    assert seg.translate_offset(tail) == _scan(log, tail, 0)
