"""A real cleaner process killed with SIGKILL mid-clean (bounded rounds on one ~16 MiB
compacted log); after each kill the reopened log must be valid, hold only records it
held before, and still hold the latest record of every key. A final clean leaves
exactly the latest record per key."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from protocol import records as R
from storage import cleaner
from storage.log import PartitionLog

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from cleaner_child import CONFIG  # noqa: E402

Rec = tuple[int, bytes, bytes | None, int]


def build(dir_path: str, rng: random.Random) -> list[Rec]:
    log = PartitionLog.open(dir_path, CONFIG, clock=lambda: 1_000)
    appended: list[Rec] = []
    ts = 0
    while log.size_in_bytes < 16 << 20:
        recs = []
        for _ in range(50):
            ts += 1
            value = None if rng.random() < 0.02 else rng.randbytes(rng.randint(100, 400))
            recs.append((b"key-%d" % rng.randint(0, 5000), value, ts))
        info = log.append(R.build_batch(recs, codec=rng.choice([0, 0, 1])))
        appended += [(info.first_offset + i, k, v, t) for i, (k, v, t) in enumerate(recs)]
    log.roll()
    log.append(R.build_batch([(b"tail", b"t", ts + 1)]))
    appended.append((log.log_end_offset - 1, b"tail", b"t", ts + 1))
    log.close()
    return appended


def read_all(log: PartitionLog) -> list[Rec]:
    out: list[Rec] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).slice.read()
        headers = [h for _, h in R.iter_batches(data)]
        assert headers
        for rec in R.iter_all_records(data):
            if rec.offset >= offset:
                assert not out or rec.offset > out[-1][0]
                out.append((rec.offset, rec.key or b"", rec.value, rec.timestamp))
        offset = max(offset, headers[-1].next_offset)
    return out


def kill_round(dir_path: str, lines_before_kill: int, extra_sleep: float) -> bool:
    """Run the child; kill it after it printed ``lines_before_kill`` steps. True if it finished."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "cleaner_child.py"), dir_path],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert proc.stdout is not None
        seen = 0
        while seen < lines_before_kill:
            line = proc.stdout.readline()
            if not line or line.strip() == "done":
                proc.wait(timeout=30)
                return True
            seen += 1
        time.sleep(extra_sleep)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return proc.returncode == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_cleaner_killed_mid_clean(tmp_path: object) -> None:
    rng = random.Random(7)
    dir_path = os.path.join(str(tmp_path), "compacted-0")
    appended = build(dir_path, rng)
    everything = set(appended)
    latest = {r[1]: r for r in appended}
    expected_final = sorted(latest.values())
    for round_no in range(4):
        kill_round(dir_path, rng.randint(1, 40), rng.random() * 0.05)
        log = PartitionLog.open(dir_path, CONFIG, recovery_point=0)
        log.update_high_watermark(log.log_end_offset)
        leftovers = [n for n in os.listdir(dir_path)
                     if n.endswith((".cleaned", ".swap", ".deleted"))]
        assert not leftovers, (round_no, leftovers)
        got = read_all(log)
        assert set(got) <= everything
        assert set(expected_final) <= set(got)
        log.close()
    log = PartitionLog.open(dir_path, CONFIG, recovery_point=0)
    log.update_high_watermark(log.log_end_offset)
    cleaner.clean_log(log, 0, log.active_segment.base_offset, 10**9, 1 << 22, {})
    assert read_all(log) == expected_final
    log.close()
