"""The log cleaner against an in-memory oracle, plus crash safety of its swap.

Model: seeded random walks of keyed appends (some tombstones, some gzip
batches), rolls, fake-clock steps, cleans through ``LogCleaner.clean_once`` and
reopens (clean shutdown or crash). The oracle predicts exactly which records a
clean keeps (latest per key in the mapped dirty section; tombstones until
delete.retention.ms after the clean that first kept them), and every read of
the whole log through ``PartitionLog.read`` must match it record for record.
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass, field

import pytest

from protocol import records as R
from storage import cleaner as C
from storage.config import LogConfig
from storage.log import PartitionLog
from storage.log_manager import LogManager

RETENTION = 10_000
CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=200, segment_index_bytes=96,
                   cleanup_policy="compact", delete_retention_ms=RETENTION,
                   min_cleanable_dirty_ratio=0.0, retention_ms=1, retention_bytes=1)
Rec = tuple[int, bytes, bytes | None, int]  # offset, key, value, timestamp


def read_all(log: PartitionLog) -> list[Rec]:
    """Every record from the log start through PartitionLog.read, checking batches."""
    out: list[Rec] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 16).slice.read()
        batches = [h for _, h in R.iter_batches(data)]
        assert batches, f"no batch at {offset}"
        R.validate(b"".join(bytes(data[p:p + h.size]) for p, h in R.iter_batches(data)),
                   from_client=False)
        for rec in R.iter_all_records(data):
            if rec.offset >= offset:
                assert not out or rec.offset > out[-1][0], "offsets must increase"
                out.append((rec.offset, rec.key or b"", rec.value, rec.timestamp))
        offset = max(offset, batches[-1].next_offset)
    return out


@dataclass
class Oracle:
    present: list[Rec] = field(default_factory=list)
    stamped: dict[int, int] = field(default_factory=dict)  # tombstone offset -> horizon

    def clean(self, first_dirty: int, end: int, now: int) -> None:
        latest: dict[bytes, int] = {}
        for off, key, _v, _ts in self.present:
            if first_dirty <= off < end:
                latest[key] = off
        kept = []
        for rec in self.present:
            off, key, value = rec[0], rec[1], rec[2]
            if off < end:
                if off < latest.get(key, -1):
                    continue
                if value is None:
                    horizon = self.stamped.get(off)
                    if horizon is not None and now >= horizon:
                        continue
                    self.stamped.setdefault(off, now + RETENTION)
            kept.append(rec)
        self.present = kept


class Walk:
    def __init__(self, seed: int, tmp: str) -> None:
        self.rng = random.Random(seed)
        self.tmp = tmp
        self.now = 1_000_000
        self.oracle = Oracle()
        self.ts = 5_000
        self.open()

    def open(self) -> None:
        self.manager = LogManager([self.tmp], CONFIG, clock=lambda: self.now)
        self.manager.startup()
        self.log = self.manager.get_or_create_log("compacted", 0)
        self.log.update_high_watermark(self.log.log_end_offset)
        self.cleaner = C.LogCleaner(self.manager)

    def append(self, tombstone_rate: float = 0.15) -> None:
        recs = []
        for _ in range(self.rng.randint(1, 5)):
            self.ts += self.rng.randint(0, 50)
            key = b"key-%d" % self.rng.randint(0, 25)
            value = None if self.rng.random() < tombstone_rate else os.urandom(self.rng.randint(0, 120))
            recs.append((key, value, self.ts))
        info = self.log.append(R.build_batch(recs, codec=self.rng.choice([0, 0, 1])),
                               leader_epoch=0)
        for i, (key, value, ts) in enumerate(recs):
            self.oracle.present.append((info.first_offset + i, key, value, ts))
        self.log.update_high_watermark(self.log.log_end_offset)

    def clean(self) -> None:
        active = self.log.active_segment
        active_bytes = open(active.log_path, "rb").read()[:active.size]
        stats = self.cleaner.clean_once(self.now)
        if stats is None:
            return
        assert stats.end_offset == active.base_offset  # no lag: everything below the active segment
        self.oracle.clean(stats.first_dirty_offset, stats.end_offset, self.now)
        assert self.log.active_segment is active
        assert open(active.log_path, "rb").read()[:active.size] == active_bytes
        assert self.cleaner.checkpoint(("compacted", 0)) == stats.end_offset
        self.check()

    def reopen(self) -> None:
        if self.rng.random() < 0.5:
            self.manager.shutdown()
        else:  # crash: no flush, no checkpoints beyond the cleaner's, no marker
            for log in self.log.segments:
                log.seal()
        self.open()
        self.check()

    def check(self) -> None:
        assert read_all(self.log) == self.oracle.present


@pytest.mark.parametrize("seed", range(8))
def test_model(tmp_path: object, seed: int) -> None:
    walk = Walk(seed, str(tmp_path))
    for _ in range(300):
        r = walk.rng.random()
        if r < 0.6:
            walk.append()
        elif r < 0.68:
            walk.log.roll()
        elif r < 0.85:
            walk.now += walk.rng.randint(0, RETENTION // 2)
            walk.clean()
        elif r < 0.9:
            walk.reopen()
        else:
            walk.now += walk.rng.randint(0, RETENTION)
    for _ in range(2):  # stamp every tombstone, then pass their horizons
        walk.append(tombstone_rate=0)
        walk.log.roll()
        walk.now += 2 * RETENTION
        walk.clean()
    # finally exactly the latest value per key, tombstones gone
    latest: dict[bytes, Rec] = {}
    for rec in walk.oracle.present:
        latest[rec[1]] = rec
    assert read_all(walk.log) == sorted((r for r in latest.values() if r[2] is not None))
    walk.manager.shutdown()


def test_policy_and_config_keys() -> None:
    cfg = LogConfig.from_properties({"cleanup.policy": "compact, delete",
                                     "min.cleanable.dirty.ratio": "0.25",
                                     "delete.retention.ms": "5", "min.compaction.lag.ms": "6",
                                     "max.compaction.lag.ms": "7"})
    assert cfg.compact and cfg.delete and cfg.min_cleanable_dirty_ratio == 0.25
    assert (cfg.delete_retention_ms, cfg.min_compaction_lag_ms, cfg.max_compaction_lag_ms) == (5, 6, 7)
    broker = LogConfig.from_properties({"log.cleanup.policy": "compact",
                                        "log.cleaner.delete.retention.ms": "9"})
    assert broker.compact and not broker.delete and broker.delete_retention_ms == 9
    assert LogConfig().delete and not LogConfig().compact


def _filled(tmp: str, config: LogConfig, now: list[int]) -> PartitionLog:
    log = PartitionLog.open(os.path.join(tmp, "t-0"), config, clock=lambda: now[0])
    for i in range(60):
        log.append(R.build_batch([(b"k%d" % (i % 10), b"v%d" % i, 1000 + i)]))
        if i % 10 == 9:
            log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


class Single:
    def __init__(self, log: PartitionLog, dir_path: str) -> None:
        self.log, self.dir = log, dir_path

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter([(("t", 0), self.log)])

    def dir_of(self, topic: str, partition: int) -> str:
        return self.dir


def test_retention_only_for_delete_policy(tmp_path: object) -> None:
    now = [10**9]
    log = _filled(str(tmp_path), CONFIG, now)
    assert log.delete_old_segments() == 0  # compact: retention.ms/bytes do not apply
    log.config = CONFIG.replace(cleanup_policy="compact,delete")
    assert log.delete_old_segments() > 0


def test_dirty_ratio_and_compaction_lags(tmp_path: object) -> None:
    now = [10_000]
    cfg = CONFIG.replace(min_cleanable_dirty_ratio=0.5)
    log = _filled(str(tmp_path), cfg, now)
    cleaner = C.LogCleaner(Single(log, str(tmp_path)))
    ltc = cleaner.describe(("t", 0), log, now[0])
    assert ltc.cleanable_ratio == 1.0 and ltc.first_uncleanable_offset == 60
    # min.compaction.lag.ms: segments with records newer than now - lag stay dirty
    log.config = cfg.replace(min_compaction_lag_ms=now[0] - 1025)
    assert cleaner.describe(("t", 0), log, now[0]).first_uncleanable_offset == 20
    log.config = cfg.replace(min_compaction_lag_ms=now[0])
    assert not cleaner.logs_to_clean(now[0])
    # once clean, nothing is dirty; max.compaction.lag.ms forces a clean of new dirt
    log.config = cfg
    stats = cleaner.clean_once(now[0])
    assert stats is not None and stats.end_offset == 60
    log.append(R.build_batch([(b"k1", b"late", 2000)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert not cleaner.logs_to_clean(now[0])  # tiny dirty ratio
    log.config = cfg.replace(max_compaction_lag_ms=100)
    assert cleaner.describe(("t", 0), log, now[0]).compaction_delay_ms > 0
    assert cleaner.clean_once(now[0]) is not None
    assert [r[1:3] for r in read_all(log) if r[1] == b"k1"] == [(b"k1", b"late")]


def test_high_watermark_bounds_cleaning(tmp_path: object) -> None:
    now = [10_000]
    log = _filled(str(tmp_path), CONFIG, now)
    log.update_high_watermark(25)
    cleaner = C.LogCleaner(Single(log, str(tmp_path)))
    assert cleaner.describe(("t", 0), log, now[0]).first_uncleanable_offset == 25


def test_map_full_cleans_partially_and_resumes(tmp_path: object) -> None:
    now = [10_000]
    log = _filled(str(tmp_path), CONFIG, now)
    stats = C.clean_log(log, 0, 60, now[0], 4, {})
    assert stats.end_offset == 4  # k0..k3 mapped, then full
    assert [r[0] for r in read_all(log)][:3] == [0, 1, 2]  # nothing past the map removed
    while stats.end_offset < 60:
        stats = C.clean_log(log, stats.end_offset, 60, now[0], 4, {})
    stats = C.clean_log(log, 50, 60, now[0], 100, {})
    assert [r[0] for r in read_all(log)] == list(range(50, 60))


def test_producer_last_batch_kept_empty_and_fields_preserved(tmp_path: object) -> None:
    now = [10_000]
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), CONFIG, clock=lambda: now[0])
    log.append(R.build_batch([(b"a", b"1", 1), (b"b", b"1", 2), (b"c", b"1", 3)],
                             producer_id=7, producer_epoch=3, base_sequence=10, codec=1),
               leader_epoch=4)
    log.append(R.build_batch([(b"a", b"2", 4), (b"b", b"2", 5)]), leader_epoch=4)
    log.append(R.build_batch([(b"c", b"2", 6)]), leader_epoch=4)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    C.clean_log(log, 0, 6, now[0], 100, C.scan_producer_last_offsets(log))
    headers = [h for _, h in log.segments[0].batches()]
    assert headers[0].records_count == 0 and headers[0].last_offset == 2
    assert (headers[0].producer_id, headers[0].producer_epoch, headers[0].base_sequence,
            headers[0].partition_leader_epoch) == (7, 3, 10, 4)
    assert [r[0] for r in read_all(log)] == [3, 4, 5]
    # without the producer's state (expired), the empty batch goes too
    log.append(R.build_batch([(b"c", b"3", 7)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    C.clean_log(log, 6, 7, now[0], 100, {})
    assert [h.records_count for _, h in log.segments[0].batches()] == [2, 1]
    assert [r[0] for r in read_all(log)] == [3, 4, 6]


def test_partially_kept_batch_keeps_last_offset_and_timestamps(tmp_path: object) -> None:
    now = [10_000]
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), CONFIG, clock=lambda: now[0])
    log.append(R.build_batch([(b"a", b"1", 100), (b"b", None, 200), (b"c", b"1", 300)], codec=1))
    log.append(R.build_batch([(b"c", b"2", 400)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    C.clean_log(log, 0, 4, now[0], 100, {})
    (_, h), *_ = log.segments[0].batches()
    assert h.last_offset == 2 and h.records_count == 2 and h.compression == 1
    assert h.attributes & R.DELETE_HORIZON_BIT and h.base_timestamp == now[0] + RETENTION
    assert h.max_timestamp == 200
    assert read_all(log) == [(0, b"a", b"1", 100), (1, b"b", None, 200), (3, b"c", b"2", 400)]
    now[0] += RETENTION - 1
    C.clean_log(log, 4, 4, now[0], 100, {})
    assert len(read_all(log)) == 3  # horizon not reached
    now[0] += 1
    C.clean_log(log, 4, 4, now[0], 100, {})
    assert read_all(log) == [(0, b"a", b"1", 100), (3, b"c", b"2", 400)]


# -- crash safety of the swap -------------------------------------------------------

class Crash(Exception):
    pass


SWAP_CONFIG = CONFIG.replace(segment_bytes=3000, segment_index_bytes=1 << 12)


def _swap_scenario(dir_path: str) -> PartitionLog:
    """Segments of ~1200 bytes, grouped in twos; the second of each pair is superseded by
    the next pair, so groups end with an emptied segment (an empty replacement)."""
    log = PartitionLog.open(dir_path, SWAP_CONFIG, clock=lambda: 10_000)
    for seg in range(6):
        for i in range(10):
            key = b"u%d-%d" % (seg, i) if seg % 2 == 0 else b"s%d" % i
            log.append(R.build_batch([(key, b"x" * 60 + b"%d" % seg, seg * 100 + i)]))
        log.roll()
    log.append(R.build_batch([(b"tail", b"t", 9999)]))
    log.update_high_watermark(log.log_end_offset)
    return log


def _reopen(dir_path: str) -> PartitionLog:
    log = PartitionLog.open(dir_path, SWAP_CONFIG, clock=lambda: 10_000)
    log.update_high_watermark(log.log_end_offset)
    return log


STEPS = ["cleaned", "swap-renamed-one", "swapped", "old-deleted-one", "final-renamed-one"]
# (group, whether recovery completes it) for the nth occurrence of a step. Groups 1 and 2 have
# two outputs (the cleaned segment and an empty replacement), group 3 one. Once every output
# of a group is a .swap (no .cleaned left), recovery completes the swap.
OUTCOME = {
    "cleaned": {1: (1, False), 2: (2, False), 3: (3, False)},
    "swap-renamed-one": {1: (1, False), 2: (1, True), 3: (2, False)},
    "swapped": {1: (1, True), 2: (2, True), 3: (3, True)},
    "old-deleted-one": {1: (1, True), 2: (1, True), 3: (2, True)},
    "final-renamed-one": {1: (1, True), 2: (1, True), 3: (2, True)},
}


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("nth", [1, 2, 3])
def test_crash_at_each_swap_step(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                 step: str, nth: int) -> None:
    tmp = str(tmp_path)
    ref_dir, dir_path = os.path.join(tmp, "ref-0"), os.path.join(tmp, "t-0")
    ref = _swap_scenario(ref_dir)
    old = read_all(ref)
    C.clean_log(ref, 0, ref.active_segment.base_offset, 10_000, 1000, {})
    new = read_all(ref)
    assert len(new) < len(old)
    assert [s.base_offset for s in ref.segments] == [0, 10, 20, 30, 40, 60]  # 2 placeholders
    ref.close()

    log = _swap_scenario(dir_path)
    seen = {"n": 0}

    def crash(name: str) -> None:
        if name == step:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash(name)
    monkeypatch.setattr(C, "fault_point", crash)
    try:
        C.clean_log(log, 0, log.active_segment.base_offset, 10_000, 1000, {})
    except Crash:
        pass
    else:
        pytest.skip(f"step {step} happens fewer than {nth} times")
    for seg in log.segments:  # the process dies: nothing more is written
        seg.seal()
    monkeypatch.undo()
    got = _reopen(dir_path)
    leftovers = [n for n in os.listdir(dir_path) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert not leftovers
    records = read_all(got)
    # groups [0, 20), [20, 40), [40, 60): those before the crashed one are new, the crashed
    # one old or new as OUTCOME says, the rest old
    group, completed = OUTCOME[step][nth]
    bound = 20 * group if completed else 20 * (group - 1)
    assert records == [r for r in new if r[0] < bound] + [r for r in old if r[0] >= bound]
    # finishing the clean after the crash reaches exactly the reference state
    C.clean_log(got, 0, got.active_segment.base_offset, 10_000, 1000, {})
    assert read_all(got) == new
    got.close()
    shutil.rmtree(dir_path)


def test_leftover_cleaned_and_swap_at_load(tmp_path: object) -> None:
    """A .swap whose old segments were not yet renamed is completed; .cleaned is discarded."""
    tmp = str(tmp_path)
    dir_path = os.path.join(tmp, "t-0")
    log = _swap_scenario(dir_path)
    old = read_all(log)
    states = []

    def stop(name: str) -> None:
        if name == "swapped":
            states.append(sorted(os.listdir(dir_path)))
            raise Crash(name)
    C.fault_point, saved = stop, C.fault_point
    try:
        with pytest.raises(Crash):
            C.clean_log(log, 0, log.active_segment.base_offset, 10_000, 1000, {})
    finally:
        C.fault_point = saved
    assert any(n.endswith(".log.swap") for n in states[0])
    for seg in log.segments:
        seg.seal()
    got = _reopen(dir_path)
    records = read_all(got)
    assert len(records) < len(old) and set(records) <= set(old)
    latest = {r[1]: r for r in old}
    assert set(latest.values()) <= set(records)


def test_cleaning_carries_the_aborted_transaction_index(tmp_path: object) -> None:
    """An aborted transaction's records the cleaner keeps stay aborted for read_committed
    readers: the cleaned segment gets the group's .txnindex entries (and keeps them
    across a reopen)."""
    from storage.txn_index import AbortedTxn
    now = [10_000]
    log = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), CONFIG, clock=lambda: now[0])
    for i in range(3):                                           # 0-2: plain records
        log.append(R.build_batch([(b"p%d" % i, b"v", 1000 + i)]))
    log.append(R.build_batch([(b"x", b"aborted", 1005)], producer_id=7, producer_epoch=0,
                             base_sequence=0, transactional=True))           # 3
    log.append(R.build_control_batch(commit=False, producer_id=7, producer_epoch=0,
                                     coordinator_epoch=0, timestamp=1006))   # 4
    log.append_aborted_txn(AbortedTxn(7, 3, 4, 5))
    log.roll()
    for i in range(3):                                           # 5-7: overwrite p0..p2
        log.append(R.build_batch([(b"p%d" % i, b"w", 1010 + i)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = C.LogCleaner(Single(log, str(tmp_path)))
    assert cleaner.clean_once(now[0]) is not None
    keys = [r[1] for r in read_all(log)]        # the old p0..p2 went; x and its marker stay
    assert keys[0] == b"x" and keys[2:] == [b"p0", b"p1", b"p2"] and len(keys) == 5
    assert log.collect_aborted_txns(0, log.log_end_offset) == [AbortedTxn(7, 3, 4, 5)]
    log.close()
    again = PartitionLog.open(os.path.join(str(tmp_path), "t-0"), CONFIG, clock=lambda: now[0])
    assert again.collect_aborted_txns(0, again.log_end_offset) == [AbortedTxn(7, 3, 4, 5)]
