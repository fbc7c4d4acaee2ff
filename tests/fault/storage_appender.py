"""Child process for test_storage_kill: append forever, print each acknowledged batch.

Usage: python tests/fault/storage_appender.py <partition dir>
Each batch holds 3 records whose values name their own offset, so the parent
can check content after recovery. Prints "<first> <last>" after every append.
"""

from __future__ import annotations

import sys

from protocol import records
from storage.config import LogConfig
from storage.log import PartitionLog

CONFIG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=512, segment_index_bytes=4096)


def value_for(offset: int) -> bytes:
    return b"offset-%d-" % offset + b"x" * (offset % 200)


def main() -> None:
    log = PartitionLog.open(sys.argv[1], CONFIG, recovery_point=0)
    out = sys.stdout
    while True:
        next_offset = log.log_end_offset
        batch = records.build_batch([(b"k", value_for(next_offset + i), 1000 + next_offset)
                                     for i in range(3)])
        info = log.append(batch, leader_epoch=0)
        out.write(f"{info.first_offset} {info.last_offset}\n")
        out.flush()


if __name__ == "__main__":
    main()
