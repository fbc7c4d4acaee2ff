"""The lines ``pybroker dump-log`` prints, field for field as Kafka 3.9's DumpLogSegments
(kafka-dump-log.sh) prints them (pure: headers and records in, text out).

Batch line (shallow iteration; one per batch, ``position`` its byte position)::

    baseOffset: B lastOffset: L count: C baseSequence: S lastSequence: Q producerId: P
    producerEpoch: E partitionLeaderEpoch: PLE isTransactional: true|false
    isControl: true|false deleteHorizonMs: OptionalLong.empty|OptionalLong[T]
    position: POS CreateTime|LogAppendTime: MAXTS size: SIZE magic: 2
    compresscodec: none|gzip|snappy|lz4|zstd crc: CRC isvalid: true|false

(all on one line). Record line (deep iteration)::

    | offset: O CreateTime: T keySize: K valueSize: V sequence: S headerKeys: [a,b]
      [ endTxnMarker: COMMIT|ABORT coordinatorEpoch: N]      (control records)
      [ key: K][ payload: V]                                   (--print-data-log)

With ``--skip-record-metadata`` the part up to headerKeys is left out and, as in
Kafka, the ``|`` prefix goes with it unless a key is printed. The sequence of a
record is the batch's base sequence plus the offset delta, wrapping at 2^31-1
(-1 when the batch has none). Index lines: ``offset: N position: P``; time
index: ``timestamp: T offset: N``; txn index: ``version: 0 producerId: P
firstOffset: F lastOffset: L lastStableOffset: S``; producer snapshot:
``producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset:
OptionalLong... lastTimestamp: T firstSequence: F lastSequence: L lastOffset: O
offsetDelta: D timestamp: T``.

The problems found along the way are collected in ``Reports`` and printed to stderr
after every file, as Kafka does (its lists are built by prepending, so each file's
pairs come out newest first; so do ours).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from protocol import records
from protocol.records import BatchHeader, Record
from storage.producer_snapshot import SnapshotEntry
from storage.txn_index import AbortedTxn

RECORD_INDENT = "|"
INT32_MAX = 0x7FFFFFFF
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# Kafka's ControlRecordType ids; ABORT and COMMIT carry an end-transaction marker
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

Parser = Callable[[Record], tuple[str | None, str | None]]


# -- Kafka's small value renderings ---------------------------------------------------------

def java_bool(value: bool) -> str:
    return "true" if value else "false"


def optional_long(value: int | None) -> str:
    """java.util.OptionalLong.toString."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def timestamp_type(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type == records.LOG_APPEND_TIME else "CreateTime"


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from 2^31-1 to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - decrement + sequence + 1
    return sequence - decrement


def last_sequence(header: BatchHeader) -> int:
    if header.base_sequence < 0:
        return -1
    return increment_sequence(header.base_sequence, header.last_offset_delta)


def delete_horizon(header: BatchHeader) -> int | None:
    """The batch's delete horizon (baseTimestamp, when attribute bit 6 says so)."""
    return header.base_timestamp if header.attributes & records.DELETE_HORIZON_BIT else None


# -- log segments ---------------------------------------------------------------------------

def batch_line(header: BatchHeader, position: int, valid: bool) -> str:
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {last_sequence(header)} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {java_bool(header.is_transactional)} "
            f"isControl: {java_bool(header.is_control)} "
            f"deleteHorizonMs: {optional_long(delete_horizon(header))} "
            f"position: {position} {timestamp_type(header)}: {header.max_timestamp} "
            f"size: {header.size} magic: {header.magic} "
            f"compresscodec: {CODEC_NAMES.get(header.compression, str(header.compression))} "
            f"crc: {header.crc} isvalid: {java_bool(valid)}")


def record_sequence(header: BatchHeader, record: Record) -> int:
    if header.base_sequence < 0:
        return -1
    return increment_sequence(header.base_sequence, record.offset - header.base_offset)


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def control_text(record: Record) -> str:
    """What Kafka prints after a control record's metadata."""
    key = record.key or b""
    if len(key) < 4:
        return f" controlType: UNKNOWN(invalid key of {len(key)} bytes)"
    _version, type_id = records.parse_control_key(key)
    name = CONTROL_TYPES.get(type_id, "UNKNOWN")
    if type_id in (records.CONTROL_ABORT, records.CONTROL_COMMIT):
        value = record.value or b""
        if len(value) < 6:
            return f" endTxnMarker: {name} coordinatorEpoch: <invalid value>"
        epoch = int.from_bytes(value[2:6], "big", signed=True)
        return f" endTxnMarker: {name} coordinatorEpoch: {epoch}"
    return f" controlType: {name}({type_id})"


def record_line(header: BatchHeader, record: Record, *, skip_metadata: bool,
                parser: Parser | None) -> str:
    """One record of a deep iteration; ``parser`` set when contents are printed."""
    prefix = f"{RECORD_INDENT} "
    parts: list[str] = []
    if not skip_metadata:
        header_keys = ",".join(k for k, _v in record.headers)
        parts.append(f"{prefix}offset: {record.offset} {timestamp_type(header)}: "
                     f"{record.timestamp} keySize: {_size(record.key)} "
                     f"valueSize: {_size(record.value)} sequence: "
                     f"{record_sequence(header, record)} headerKeys: [{header_keys}]")
        prefix = " "
        if header.is_control:
            parts.append(control_text(record))
    if parser is not None and not header.is_control:
        key, payload = parser(record)
        if key is not None:
            parts.append(f"{prefix}key: {key}")
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


# -- indexes and snapshots ------------------------------------------------------------------

def index_line(offset: int, position: int) -> str:
    return f"offset: {offset} position: {position}"


def time_index_line(timestamp: int, offset: int) -> str:
    return f"timestamp: {timestamp} offset: {offset}"


def txn_index_line(txn: AbortedTxn, version: int = 0) -> str:
    return (f"version: {version} producerId: {txn.producer_id} firstOffset: {txn.first_offset} "
            f"lastOffset: {txn.last_offset} lastStableOffset: {txn.last_stable_offset}")


def snapshot_line(entry: SnapshotEntry) -> str:
    """Kafka's dumpProducerIdSnapshot: the batch part only when the producer has one."""
    first_txn = entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else None
    line = (f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} "
            f"currentTxnFirstOffset: {optional_long(first_txn)} "
            f"lastTimestamp: {entry.timestamp} ")
    if entry.last_offset >= 0:
        line += (f"firstSequence: {decrement_sequence(entry.last_sequence, entry.offset_delta)} "
                 f"lastSequence: {entry.last_sequence} lastOffset: {entry.last_offset} "
                 f"offsetDelta: {entry.offset_delta} timestamp: {entry.timestamp}")
    return line


# -- problems, reported after every file -----------------------------------------------------

Pairs = dict[str, list[tuple[int, int]]]   # absolute file path -> (a, b) pairs, newest first


def _record(pairs: Pairs, path: str, a: int, b: int) -> None:
    pairs.setdefault(os.path.abspath(path), []).insert(0, (a, b))


@dataclass
class Reports:
    index_mismatches: Pairs = field(default_factory=dict)       # (index offset, log offset)
    time_mismatches: Pairs = field(default_factory=dict)        # (index ts, log ts)
    time_out_of_order: Pairs = field(default_factory=dict)      # (index ts, previous ts)
    time_offset_not_found: Pairs = field(default_factory=dict)  # (index offset, log offset)
    non_consecutive: Pairs = field(default_factory=dict)        # (offset, next offset)

    def index_mismatch(self, path: str, index_offset: int, log_offset: int) -> None:
        _record(self.index_mismatches, path, index_offset, log_offset)

    def time_mismatch(self, path: str, index_ts: int, log_ts: int) -> None:
        _record(self.time_mismatches, path, index_ts, log_ts)

    def time_out_of_order_entry(self, path: str, index_ts: int, previous_ts: int) -> None:
        _record(self.time_out_of_order, path, index_ts, previous_ts)

    def time_offset_missing(self, path: str, index_offset: int, log_offset: int) -> None:
        _record(self.time_offset_not_found, path, index_offset, log_offset)

    def gap(self, path: str, offset: int, next_offset: int) -> None:
        _record(self.non_consecutive, path, offset, next_offset)

    @property
    def any(self) -> bool:
        return any((self.index_mismatches, self.time_mismatches, self.time_out_of_order,
                    self.time_offset_not_found, self.non_consecutive))

    def write(self, err: IO[str]) -> None:
        """Kafka's order and wording (its time-index lists keep arrival order)."""
        for path, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{path}\n")
            err.writelines(f"  Index offset: {a}, log offset: {b}\n" for a, b in pairs)
        for path, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{path}\n")
            err.writelines(f"  Index timestamp: {a}, log timestamp: {b}\n"
                           for a, b in reversed(pairs))
        for path, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{path}\n")
            err.writelines(f"  Index timestamp: {a}, Previously indexed timestamp: {b}\n"
                           for a, b in reversed(pairs))
        for pairs in self.time_offset_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            err.writelines(f"Indexed offset: {a}, found log offset: {b}\n"
                           for a, b in reversed(pairs))
        for path, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {path}\n")
            err.writelines(f"  {a} is followed by {b}\n" for a, b in pairs)


__all__ = ["RECORD_INDENT", "Reports", "batch_line", "index_line", "record_line",
           "snapshot_line", "time_index_line", "txn_index_line"]
