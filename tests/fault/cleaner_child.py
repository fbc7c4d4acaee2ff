"""Child process for test_cleaner_kill: cleans the compacted log in argv[1], printing each
swap step as it passes (the parent kills it by pid somewhere along the way)."""

from __future__ import annotations

import sys

from storage import cleaner
from storage.config import LogConfig
from storage.log import PartitionLog

CONFIG = LogConfig(segment_bytes=1 << 20, index_interval_bytes=4096, cleanup_policy="compact",
                   delete_retention_ms=10**12)


def main(dir_path: str) -> None:
    log = PartitionLog.open(dir_path, CONFIG, recovery_point=0)
    log.update_high_watermark(log.log_end_offset)
    cleaner.fault_point = lambda step: print(step, flush=True)
    print("start", flush=True)
    cleaner.clean_log(log, 0, log.active_segment.base_offset, 10**9, 1 << 22,
                      cleaner.scan_producer_last_offsets(log))
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
