"""Log cleaner throughput: build a compacted log of SIZE MiB (keyed records, 50 per
batch, a third gzip'd), then time one full clean. Prints MB/s of log read.

    .venv/bin/python bench/cleaner.py [size_mib=256] [keys=100000] [value_bytes=250]
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol import records as R  # noqa: E402
from storage import cleaner  # noqa: E402
from storage.config import LogConfig  # noqa: E402
from storage.log import PartitionLog  # noqa: E402


def main() -> None:
    size_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    keys = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    value_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 250
    cfg = LogConfig(cleanup_policy="compact", segment_bytes=64 << 20)
    tmp = tempfile.mkdtemp(prefix="cleaner-bench-")
    try:
        log = PartitionLog.open(os.path.join(tmp, "bench-0"), cfg)
        rng = random.Random(1)
        payloads = [rng.randbytes(value_bytes) for _ in range(64)]
        ts = 0
        while log.size_in_bytes < size_mib << 20:
            recs = []
            for i in range(50):
                ts += 1
                recs.append((b"key-%d" % rng.randrange(keys), payloads[ts % 64], ts))
            log.append(R.build_batch(recs, codec=1 if ts % 3 == 0 else 0))
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        size = log.size_in_bytes
        started = time.monotonic()
        stats = cleaner.clean_log(log, 0, log.active_segment.base_offset, 0, 5_000_000, {})
        elapsed = time.monotonic() - started
        print(f"cleaned {size / 2**20:.0f} MiB ({stats.records.records_read} records, "
              f"{keys} keys) in {elapsed:.1f} s: {size / 2**20 / elapsed:.1f} MiB/s; "
              f"kept {stats.records.records_kept} records, {stats.bytes_written / 2**20:.1f} MiB; "
              f"{stats.segments_in} -> {stats.segments_out} segments")
        log.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("reproduce: .venv/bin/python bench/cleaner.py", size_mib, keys, value_bytes)


if __name__ == "__main__":
    main()
