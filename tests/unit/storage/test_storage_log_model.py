"""PartitionLog against an in-memory oracle: a seeded random walk of appends, reads,
rolls, truncations, retention, log-start moves, timestamp lookups and reopens
(clean and after a simulated crash)."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

import pytest

from protocol import records as R
from storage.config import LogConfig
from storage.log import OffsetOutOfRangeError, PartitionLog

CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=300, segment_index_bytes=96,
                   retention_bytes=20_000, retention_ms=-1)


@dataclass
class Oracle:
    """Batches as (base, [(offset, key, value, timestamp)]), in offset order."""

    batches: list[tuple[int, list[tuple[int, bytes, bytes, int]]]] = field(default_factory=list)
    log_start: int = 0

    @property
    def leo(self) -> int:
        return self.batches[-1][1][-1][0] + 1 if self.batches else self.log_start

    def records_from(self, offset: int) -> list[tuple[int, bytes, bytes, int]]:
        return [r for _, recs in self.batches for r in recs if r[0] >= offset]

    def drop_below(self, start: int) -> None:
        self.log_start = max(self.log_start, start)
        self.batches = [b for b in self.batches if b[1][-1][0] >= start]


class Walk:
    def __init__(self, seed: int, tmp: str) -> None:
        self.rng = random.Random(seed)
        self.dir = os.path.join(tmp, "walk-0")
        self.now = 1_000_000
        self.log = PartitionLog.open(self.dir, CONFIG, clock=lambda: self.now)
        self.oracle = Oracle()
        self.ts = 1_000

    def append(self) -> None:
        n = self.rng.randint(1, 6)
        recs = []
        for _ in range(n):
            self.ts += self.rng.randint(-3, 10)
            recs.append((b"k%d" % self.rng.randint(0, 99), os.urandom(self.rng.randint(0, 300)),
                         max(self.ts, 0)))
        codec = self.rng.choice([0, 0, 0, 1])
        info = self.log.append(R.build_batch(recs, codec=codec), leader_epoch=self.rng.randint(0, 1)
                               + self.log.leader_epoch_cache.latest_epoch if self.log.leader_epoch_cache.latest_epoch >= 0 else 0)
        assert info.first_offset == self.oracle.leo
        assert info.last_offset == info.first_offset + n - 1
        self.oracle.batches.append((info.first_offset, [
            (info.first_offset + i, k, v, ts) for i, (k, v, ts) in enumerate(recs)]))
        self.log.update_high_watermark(self.log.log_end_offset)

    def read(self) -> None:
        o = self.oracle
        offset = self.rng.randint(o.log_start, o.leo)
        # high watermarks sit on batch boundaries (a follower's LEO)
        hw = self.rng.choice([b for b, _ in o.batches if b >= offset] + [o.leo])
        self.log.update_high_watermark(hw)
        max_bytes = self.rng.choice([1, 500, 5000, 100_000])
        result = self.log.read(offset, max_bytes, max_offset=hw)
        data = result.slice.read()
        got = [(r.offset, r.key, r.value, r.timestamp) for r in R.iter_all_records(data)]
        want = [r for r in o.records_from(0) if r[0] < hw]
        if offset < hw:
            assert got, f"nothing read at {offset} below hw {hw}"
            # starts with the batch holding offset, then contiguous oracle records below hw
            first = want.index(got[0])
            assert got == want[first:first + len(got)]
            assert got[0][0] <= offset <= got[-1][0]
            if max_bytes >= 100_000:  # whole segment tails fit: we read up to hw or segment end
                assert got[-1][0] == hw - 1 or self.log.segments[-1].base_offset > got[-1][0]
        else:
            assert got == []
        with pytest.raises(OffsetOutOfRangeError):
            self.log.read(o.leo + 1, 100)
        self.log.update_high_watermark(self.log.log_end_offset)

    def truncate(self) -> None:
        o = self.oracle
        if not o.batches:
            return
        base = self.rng.choice([b for b, _ in o.batches])
        self.log.truncate_to(base)
        o.batches = [b for b in o.batches if b[0] < base]
        o.log_start = min(o.log_start, base)  # Kafka: the log start never exceeds the new end

    def retention(self) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)
        self.log.delete_old_segments()
        assert self.log.size_in_bytes <= CONFIG.retention_bytes + CONFIG.segment_bytes
        self.oracle.drop_below(self.log.log_start_offset)

    def delete_records(self) -> None:
        o = self.oracle
        target = self.rng.randint(o.log_start, o.leo)
        self.log.update_high_watermark(self.log.log_end_offset)
        self.log.maybe_increment_log_start_offset(target)
        o.log_start = max(o.log_start, target)

    def timestamp_lookup(self) -> None:
        o = self.oracle
        target = self.ts + self.rng.randint(-80, 5)
        want = next(((r[0], r[3]) for r in o.records_from(o.log_start) if r[3] >= target), None)
        assert self.log.offset_for_timestamp(target) == want

    def reopen(self, crash: bool) -> None:
        if crash:
            old = self.log  # no close: files keep their preallocated tails, as after a kill
            self.log = PartitionLog.open(self.dir, CONFIG, recovery_point=0,
                                         log_start_offset=old.log_start_offset,
                                         clock=lambda: self.now)
            del old
        else:
            start = self.log.log_start_offset
            self.log.close()
            self.log = PartitionLog.open(self.dir, CONFIG, log_start_offset=start,
                                         clean_shutdown=True, clock=lambda: self.now)
        self.log.update_high_watermark(self.log.log_end_offset)

    def check(self) -> None:
        o = self.oracle
        assert self.log.log_end_offset == o.leo
        assert self.log.log_start_offset == o.log_start
        bases = [s.base_offset for s in self.log.segments]
        assert bases == sorted(bases) and len(set(bases)) == len(bases)

    def step(self) -> None:
        op = self.rng.choices(
            ["append", "read", "roll", "truncate", "retention", "delete_records", "ts",
             "reopen", "crash"],
            weights=[40, 20, 3, 4, 4, 2, 6, 2, 2])[0]
        if op == "append":
            self.append()
        elif op == "read":
            self.read()
        elif op == "roll":
            self.log.roll()
        elif op == "truncate":
            self.truncate()
        elif op == "retention":
            self.retention()
        elif op == "delete_records":
            self.delete_records()
        elif op == "ts":
            self.timestamp_lookup()
        else:
            self.reopen(crash=op == "crash")
        self.check()


@pytest.mark.parametrize("seed", range(8))
def test_random_walk_matches_oracle(seed: int, tmp_path: object) -> None:
    walk = Walk(seed, str(tmp_path))
    for _ in range(250):
        walk.step()
    walk.reopen(crash=False)
    walk.check()
    walk.log.update_high_watermark(walk.log.log_end_offset)
    result = walk.log.read(walk.oracle.log_start, 10**9)
    start = walk.oracle.log_start  # the first batch may begin below the log start
    got = [r.offset for r in R.iter_all_records(result.slice.read()) if r.offset >= start]
    want = [r[0] for r in walk.oracle.records_from(walk.oracle.log_start)]
    assert got == want[:len(got)] and (got or not want)  # the first segment's worth, in order
    walk.log.close()
