"""Kafka's on-disk names, in one place (Kafka ``LogFileUtils``).

A segment is named by its base offset, zero-padded to 20 digits:
``00000000000000170410.log`` with ``.index`` and ``.timeindex`` beside it.
Suffixes appended to a whole file name mark pending operations: ``.deleted``
(segment being removed), ``.cleaned`` (compaction output not yet swapped in),
``.swap`` (compaction output ready to replace older segments).
"""

from __future__ import annotations

import os

LOG = ".log"
INDEX = ".index"
TIME_INDEX = ".timeindex"
TXN_INDEX = ".txnindex"
SNAPSHOT = ".snapshot"
DELETED = ".deleted"
CLEANED = ".cleaned"
SWAP = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"


def filename_prefix(offset: int) -> str:
    """20-digit zero-padded base offset."""
    return f"{offset:020d}"


def log_file(dir_path: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(dir_path, filename_prefix(base_offset) + LOG + suffix)


def index_file(dir_path: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(dir_path, filename_prefix(base_offset) + INDEX + suffix)


def time_index_file(dir_path: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(dir_path, filename_prefix(base_offset) + TIME_INDEX + suffix)


def txn_index_file(dir_path: str, base_offset: int, suffix: str = "") -> str:
    return os.path.join(dir_path, filename_prefix(base_offset) + TXN_INDEX + suffix)


def parse_base_offset(name: str) -> int:
    """Base offset from a segment file name (any suffix); ValueError if not one."""
    base = os.path.basename(name)
    digits = base.split(".", 1)[0]
    if len(digits) != 20 or not digits.isdigit():
        raise ValueError(f"not a segment file name: {name!r}")
    return int(digits)


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


MAX_FILENAME = 255      # bytes in a file name on the filesystems we run on


def delete_dir_name(topic: str, partition: int, unique: str) -> str:
    """``<topic>-<partition>.<unique>-delete``, the topic cut so that the name fits
    MAX_FILENAME (as Kafka's logDirNameWithSuffixCappedLength: a 249-character topic
    plus the suffix would not fit). Only the suffix is ever read back."""
    suffix = f"-{partition}.{unique}{DELETE_DIR_SUFFIX}"
    room = MAX_FILENAME - len(suffix.encode())
    cut = topic.encode()[:max(room, 0)].decode(errors="ignore")
    return cut + suffix


def parse_partition_dir(name: str) -> tuple[str, int]:
    """(topic, partition) from ``<topic>-<partition>``; ValueError otherwise."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        raise ValueError(f"not a partition directory: {name!r}")
    return topic, int(part)
