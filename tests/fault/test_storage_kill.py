"""A real appender process killed with SIGKILL mid-append; everything it acknowledged
must survive recovery and the log must be valid. A few bounded rounds on one log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from protocol import records
from storage.log import PartitionLog

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from storage_appender import CONFIG, value_for  # noqa: E402


def run_round(dir_path: str, min_acks: int) -> int:
    """Start the appender, kill it by pid after ``min_acks`` acks; highest acked offset."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "storage_appender.py"), dir_path],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    last = -1
    acks = 0
    deadline = time.monotonic() + 30
    try:
        assert proc.stdout is not None
        while acks < min_acks and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            last = int(line.split()[1])
            acks += 1
        assert acks >= min_acks, f"appender produced only {acks} acks"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        for line in proc.stdout:  # acks printed before the kill landed
            last = int(line.split()[1])
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    return last


def verify(dir_path: str, acked_last: int) -> int:
    log = PartitionLog.open(dir_path, CONFIG, recovery_point=0)
    try:
        assert log.log_end_offset > acked_last
        log.update_high_watermark(log.log_end_offset)
        offset = 0
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20).slice.read()
            records.validate(data, from_client=False)  # whole, CRC-valid batches only
            recs = [r for r in records.iter_all_records(data) if r.offset >= offset]
            assert recs and recs[0].offset == offset
            for r in recs:
                assert r.value == value_for(r.offset), r.offset
            offset = recs[-1].offset + 1
        assert len(log.segments) > 1
        return log.log_end_offset
    finally:
        log.close()


def test_sigkill_mid_append_loses_nothing_acknowledged(tmp_path: object) -> None:
    dir_path = os.path.join(str(tmp_path), "kill-0")
    acked = -1
    for round_no in range(4):
        acked = max(acked, run_round(dir_path, min_acks=300 + 250 * round_no))
        leo = verify(dir_path, acked)
        assert leo > acked
