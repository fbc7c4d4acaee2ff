"""The Kafka settings the storage engine reads, with Kafka's defaults.

The broker maps server.properties (and per-topic overrides) onto this
dataclass through ``LogConfig.from_properties``; storage never parses
property files itself. Durations are milliseconds, sizes bytes; ``-1`` means
unlimited where Kafka says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30                 # log.segment.bytes / segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000       # log.roll.ms (log.roll.hours=168) / segment.ms
    segment_jitter_ms: int = 0                   # log.roll.jitter.ms / segment.jitter.ms
    index_interval_bytes: int = 4096             # log.index.interval.bytes / index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # log.index.size.max.bytes / segment.index.bytes
    retention_ms: int = 7 * 24 * 3600 * 1000     # log.retention.ms (hours=168) / retention.ms; -1 = forever
    retention_bytes: int = -1                    # log.retention.bytes / retention.bytes; -1 = no limit
    flush_interval_messages: int = LONG_MAX      # log.flush.interval.messages / flush.messages
    flush_interval_ms: int = LONG_MAX            # log.flush.interval.ms / flush.ms (default: page cache)
    file_delete_delay_ms: int = 60_000           # log.segment.delete.delay.ms / file.delete.delay.ms
    max_message_bytes: int = 1_048_588           # message.max.bytes / max.message.bytes
    message_timestamp_type: str = "CreateTime"   # log.message.timestamp.type / message.timestamp.type
    preallocate: bool = False                    # log.preallocate: real blocks (fallocate), not sparse
    flush_on_roll: bool = False                  # ours: fsync a segment when it is rolled (Kafka does
                                                 # this on a background thread; the broker may too)
    # Compaction (storage/cleaner.py). Cleaned segments are grouped up to segment_bytes of log
    # and segment_index_bytes of each index, as Kafka's cleaner groups them.
    cleanup_policy: str = "delete"               # log.cleanup.policy / cleanup.policy: "delete",
                                                 # "compact" or "compact,delete"
    min_cleanable_dirty_ratio: float = 0.5       # log.cleaner.min.cleanable.ratio / min.cleanable.dirty.ratio
    delete_retention_ms: int = 86_400_000        # log.cleaner.delete.retention.ms / delete.retention.ms
    min_compaction_lag_ms: int = 0               # log.cleaner.min.compaction.lag.ms / min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX        # log.cleaner.max.compaction.lag.ms / max.compaction.lag.ms
    # -- issue 17 (record validation, protocol/record_validation.py): CreateTime bounds ----
    message_timestamp_before_max_ms: int = LONG_MAX      # (log.)message.timestamp.before.max.ms
    message_timestamp_after_max_ms: int = LONG_MAX       # (log.)message.timestamp.after.max.ms
    message_timestamp_difference_max_ms: int = LONG_MAX  # deprecated; fills in for the two above
    # -- end issue 17 ----------------------------------------------------------------------
    # issue 18: the codec batches are stored in; "producer" keeps the producer's (the
    # leader recompresses otherwise: protocol/recompress.py, broker/replication/record_checks.py)
    compression_type: str = "producer"           # compression.type (broker and topic key)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        """Retention by time and size applies (Kafka: "delete" in cleanup.policy)."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def replace(self, **changes: Any) -> LogConfig:   # field name -> value, as dataclasses'
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """Apply broker (``log.*``) or topic keys from ``props`` over ``base`` (defaults)."""
        values: dict[str, Any] = {}           # field name -> parsed value
        # Kafka: *.ms beats *.minutes beats *.hours, so apply them in that order.
        for key, raw in sorted(props.items(), key=lambda kv: _PRIORITY.get(kv[0], 0)):
            spec = _KEYS.get(key)
            if spec is None:
                continue
            name, scale = spec
            if name in ("message_timestamp_type", "compression_type"):
                values[name] = raw.strip()
            elif name == "cleanup_policy":
                values[name] = ",".join(p.strip().lower() for p in raw.split(",") if p.strip())
            elif name == "min_cleanable_dirty_ratio":
                values[name] = float(raw)
            elif name == "preallocate":
                values[name] = raw.strip().lower() == "true"
            else:
                number = int(raw)
                values[name] = number * scale if number >= 0 else number
        return dataclasses.replace(base or cls(), **values)


_KEYS: dict[str, tuple[str, int]] = {
    "log.segment.bytes": ("segment_bytes", 1), "segment.bytes": ("segment_bytes", 1),
    "log.roll.hours": ("segment_ms", 3_600_000), "log.roll.ms": ("segment_ms", 1),
    "segment.ms": ("segment_ms", 1),
    "log.roll.jitter.ms": ("segment_jitter_ms", 1), "segment.jitter.ms": ("segment_jitter_ms", 1),
    "log.index.interval.bytes": ("index_interval_bytes", 1),
    "index.interval.bytes": ("index_interval_bytes", 1),
    "log.index.size.max.bytes": ("segment_index_bytes", 1),
    "segment.index.bytes": ("segment_index_bytes", 1),
    "log.retention.hours": ("retention_ms", 3_600_000),
    "log.retention.minutes": ("retention_ms", 60_000),
    "log.retention.ms": ("retention_ms", 1), "retention.ms": ("retention_ms", 1),
    "log.retention.bytes": ("retention_bytes", 1), "retention.bytes": ("retention_bytes", 1),
    "log.flush.interval.messages": ("flush_interval_messages", 1),
    "flush.messages": ("flush_interval_messages", 1),
    "log.flush.interval.ms": ("flush_interval_ms", 1), "flush.ms": ("flush_interval_ms", 1),
    "log.segment.delete.delay.ms": ("file_delete_delay_ms", 1),
    "file.delete.delay.ms": ("file_delete_delay_ms", 1),
    "message.max.bytes": ("max_message_bytes", 1), "max.message.bytes": ("max_message_bytes", 1),
    "log.message.timestamp.type": ("message_timestamp_type", 1),
    "message.timestamp.type": ("message_timestamp_type", 1),
    "log.preallocate": ("preallocate", 1), "preallocate": ("preallocate", 1),
    "log.cleanup.policy": ("cleanup_policy", 1), "cleanup.policy": ("cleanup_policy", 1),
    "log.cleaner.min.cleanable.ratio": ("min_cleanable_dirty_ratio", 1),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", 1),
    "log.cleaner.delete.retention.ms": ("delete_retention_ms", 1),
    "delete.retention.ms": ("delete_retention_ms", 1),
    "log.cleaner.min.compaction.lag.ms": ("min_compaction_lag_ms", 1),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", 1),
    "log.cleaner.max.compaction.lag.ms": ("max_compaction_lag_ms", 1),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", 1),
    # issue 17: timestamp bounds of record validation
    "log.message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", 1),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", 1),
    "log.message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", 1),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", 1),
    "log.message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", 1),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", 1),
    "compression.type": ("compression_type", 1),     # issue 18
}

_PRIORITY = {"log.retention.minutes": 1, "log.retention.ms": 2, "log.roll.ms": 2}
