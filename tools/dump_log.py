"""``pybroker dump-log``: Kafka's kafka-dump-log.sh (DumpLogSegments), on the files.

    pybroker dump-log --files F1[,F2...] [--deep-iteration] [--print-data-log]
        [--skip-record-metadata] [--index-sanity-check] [--verify-index-only]
        [--max-bytes N] [--max-message-size N] [--offsets-decoder]
        [--transaction-log-decoder] [--key-decoder-class C] [--value-decoder-class C]

The one tool that reads a log dir's files rather than talking to a broker, as Kafka's
does: run it beside the broker (or on a copy of its files). It only reads; nothing is
truncated, rebuilt or locked, so it is safe on a live broker's files (an active
segment's tail may be mid-write: its last batch can show as invalid bytes).

Per file, by suffix (each preceded by ``Dumping <file>``):

  .log        ``Log starting offset: N`` then a line per batch (layout in
              tools/dump_log_format.py); ``--deep-iteration`` adds a ``|`` line per
              record, ``--print-data-log`` (implied by a decoder flag; implies deep)
              its key and payload. ``--max-bytes`` reads only the batches that end
              within that many bytes; without it a tail that is no whole batch is
              reported as ``Found N invalid bytes at the end of <name>``.
  .index      ``offset: N position: P`` per entry; each entry's position must hold a
              batch whose last offset is the entry's offset, else a mismatch is
              reported. The .log beside it is read. A preallocated index of an active
              segment ends at its first zero entry.
  .timeindex  ``timestamp: T offset: N`` per entry, checked as Kafka does: the batch
              ending at N must exist and its largest record timestamp must be T, and
              timestamps must grow.
  --index-sanity-check (.index/.timeindex): only the check the broker runs when it
              opens a segment (storage's sanity_check): ``<file> passed sanity check.``
              or the reason on stderr. --verify-index-only: the checks, no entry lines.
  .txnindex   one line per aborted transaction.
  .snapshot   the producer-state snapshot, one line per producer.
  leader-epoch-checkpoint, recovery-point-offset-checkpoint, replication-offset-checkpoint,
  log-start-offset-checkpoint: their entries (ours; Kafka's tool ignores them).

Mismatches, out-of-order timestamps and non-consecutive offsets go to stderr after
every file has been dumped, in Kafka's wording. Exit status 1 when a file could not be
read or an index failed its sanity check (Kafka stops at the first such file with a
stack trace; this tool reports it and goes on), 0 otherwise; mismatches are reports,
not failures, as in Kafka.

Layering: the one tool allowed to import storage/ (its index, snapshot and checkpoint
readers) beside protocol/ (record batches); tests/unit/test_layering.py names it.
"""

from __future__ import annotations

import mmap
import os
import sys
from argparse import Namespace
from collections.abc import Iterator
from typing import IO

from protocol import records
from protocol.records import BatchHeader, RecordError
from protocol.primitives import DecodeError
from storage import checkpoints, filenames, producer_snapshot, txn_index
from storage.mmap_index import CorruptIndexError, MmapIndex
from storage.offset_index import OffsetIndex
from storage.time_index import TimeIndex
from tools import ToolError, ToolParser, parse_or_status, streams
from tools import dump_log_format as fmt
from tools.dump_log_decoders import (Parser, decoder_named, decoder_parser, offsets_parser,
                                     transaction_log_parser)

INT32_MAX = 0x7FFFFFFF
OFFSET_CHECKPOINTS = (filenames.RECOVERY_POINT_CHECKPOINT, filenames.REPLICATION_CHECKPOINT,
                      filenames.LOG_START_CHECKPOINT)


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker dump-log", out=out, err=err,
                   description="This tool helps to parse a log file and dump its contents to "
                               "the console, useful for debugging a seemingly corrupt log "
                               "segment.")
    p.add_argument("--files", required=True, metavar="file1,file2,...",
                   help="REQUIRED: The comma separated list of data and index log files to "
                        "be dumped.")
    p.add_argument("--print-data-log", action="store_true",
                   help="print the records' keys and payloads (implied by any decoder option)")
    p.add_argument("--deep-iteration", action="store_true",
                   help="print every record, not only batches (implied by --print-data-log)")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="leave out each record's offset, timestamp, sizes and header keys")
    p.add_argument("--verify-index-only", action="store_true",
                   help="verify index files without printing their entries")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="only run the check a broker runs on opening an index")
    p.add_argument("--max-message-size", type=int, default=5 * 1024 * 1024, metavar="size",
                   help="size of the largest batch, for index verification (default 5242880)")
    p.add_argument("--max-bytes", type=int, default=INT32_MAX, metavar="size",
                   help="read at most this many bytes of each .log")
    p.add_argument("--offsets-decoder", action="store_true",
                   help="decode records as __consumer_offsets offsets and group metadata")
    p.add_argument("--transaction-log-decoder", action="store_true",
                   help="decode records as __transaction_state transaction metadata")
    p.add_argument("--key-decoder-class", nargs="?", const="", default=None, metavar="class",
                   help="org.apache.kafka.tools.api.{String,Integer,Long}Decoder "
                        "(default StringDecoder: UTF-8)")
    p.add_argument("--value-decoder-class", nargs="?", const="", default=None, metavar="class",
                   help="as --key-decoder-class, for values")
    return p


def parse_args(argv: list[str], out: IO[str], err: IO[str]) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    args.file_list = [f for f in args.files.split(",") if f]
    if not args.file_list:
        raise ToolError("--files names no file")
    for name in ("max_bytes", "max_message_size"):
        if getattr(args, name) <= 0:
            raise ToolError(f"--{name.replace('_', '-')} must be positive, got "
                            f"{getattr(args, name)}")
    decoded = (args.offsets_decoder or args.transaction_log_decoder
               or args.key_decoder_class is not None or args.value_decoder_class is not None)
    args.print_contents = args.print_data_log or decoded
    args.deep = args.deep_iteration or args.print_contents
    return args


def message_parser(args: Namespace, out: IO[str]) -> Parser:
    if args.offsets_decoder:
        return offsets_parser
    if args.transaction_log_decoder:
        return transaction_log_parser
    try:
        value, value_notice = decoder_named(args.value_decoder_class)
        key, key_notice = decoder_named(args.key_decoder_class)
    except ValueError as e:
        raise ToolError(str(e)) from None
    for notice in (value_notice, key_notice):
        if notice:
            out.write(notice + "\n")
    return decoder_parser(key, value)


# -- reading a .log ---------------------------------------------------------------------

class LogFile:
    """A segment's .log, mapped read-only (an empty file maps to nothing)."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "rb") as f:
            self.size = os.fstat(f.fileno()).st_size
            self.buf: mmap.mmap | bytes = (mmap.mmap(f.fileno(), self.size, access=mmap.ACCESS_READ)
                                           if self.size else b"")

    def close(self) -> None:
        if isinstance(self.buf, mmap.mmap):
            self.buf.close()

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch in [start, end)."""
        end = self.size if end is None else min(end, self.size)
        return records.iter_batches(self.buf, start, end)

    def first_batch(self, position: int, max_size: int) -> BatchHeader | None:
        """The batch at ``position`` if it ends within ``max_size`` bytes (Kafka's slice)."""
        return next((h for _p, h in self.batches(position, position + max_size)), None)


def log_beside(index_path: str) -> str:
    """``<dir>/<base>.log`` for ``<dir>/<base>.<anything>``, as Kafka finds it."""
    directory = os.path.dirname(os.path.abspath(index_path))
    return os.path.join(directory, os.path.basename(index_path).split(".")[0] + filenames.LOG)


def start_offset_of(path: str) -> int:
    head = os.path.basename(path).split(".")[0]
    if not head.isdigit():
        raise ToolError(f"{path}: the file name does not start with a base offset")
    return int(head)


# -- the dumps ----------------------------------------------------------------------------

def dump_log(path: str, args: Namespace, parser: Parser | None, reports: fmt.Reports,
             out: IO[str]) -> None:
    out.write(f"Log starting offset: {start_offset_of(path)}\n")
    with LogFile(path) as log:
        limit = min(log.size, args.max_bytes)
        valid_bytes = 0
        last_offset = -1
        for position, header in log.batches(0, limit):
            if header.magic != records.MAGIC:
                raise ToolError(f"{path}: batch of magic {header.magic} at position "
                                f"{position}; only magic {records.MAGIC} is read")
            out.write(fmt.batch_line(header, position, records.crc_ok(log.buf, position, header))
                      + "\n")
            if args.deep:
                for record in records.iter_records(log.buf, position):
                    if last_offset != -1 and record.offset != last_offset + 1:
                        reports.gap(path, last_offset, record.offset)
                    last_offset = record.offset
                    out.write(fmt.record_line(header, record,
                                              skip_metadata=args.skip_record_metadata,
                                              parser=parser) + "\n")
            valid_bytes = position + header.size
        trailing = limit - valid_bytes
        if trailing > 0 and args.max_bytes == INT32_MAX:
            out.write(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}\n")


def _open_index(kind: type[MmapIndex], path: str) -> MmapIndex:
    size = os.path.getsize(path)
    return kind(path, start_offset_of(path), max(size, kind.ENTRY.size), writable=False)


def dump_index(path: str, args: Namespace, reports: fmt.Reports, out: IO[str]) -> None:
    index = _open_index(OffsetIndex, path)
    try:
        if index.entries == 0:
            out.write(f"{path} is empty.\n")
            return
        with LogFile(log_beside(path)) as log:
            if args.index_sanity_check:
                assert isinstance(index, OffsetIndex)
                index.sanity_check(log.size)
                out.write(f"{path} passed sanity check.\n")
                return
            for slot in range(index.entries):
                rel, position = index.entry(slot)
                if rel == 0 and slot > 0:       # the zero tail of a preallocated file
                    return
                offset = index.base_offset + rel
                batch = log.first_batch(position, args.max_message_size)
                batch_last = -1 if batch is None else batch.last_offset
                if batch_last != offset:
                    reports.index_mismatch(path, offset, batch_last)
                if not args.verify_index_only:
                    out.write(fmt.index_line(offset, position) + "\n")
    finally:
        index.close()


def dump_time_index(path: str, args: Namespace, reports: fmt.Reports, out: IO[str]) -> None:
    time_index = _open_index(TimeIndex, path)
    try:
        if args.index_sanity_check:
            assert isinstance(time_index, TimeIndex)
            time_index.sanity_check()
            out.write(f"{path} passed sanity check.\n")
            return
        if time_index.entries == 0:
            return
        index_path = os.path.splitext(log_beside(path))[0] + filenames.INDEX
        offset_index = _open_index(OffsetIndex, index_path)
        try:
            with LogFile(log_beside(path)) as log:
                _check_time_entries(path, time_index, offset_index, log, args, reports, out)
        finally:
            offset_index.close()
    finally:
        time_index.close()


def _check_time_entries(path: str, time_index: MmapIndex, offset_index: MmapIndex,
                        log: LogFile, args: Namespace, reports: fmt.Reports,
                        out: IO[str]) -> None:
    assert isinstance(offset_index, OffsetIndex)
    previous_ts = -1
    for slot in range(time_index.entries):
        timestamp, rel = time_index.entry(slot)
        if rel == 0 and slot > 0:               # the zero tail of a preallocated file
            return
        offset = time_index.base_offset + rel
        _, position = offset_index.lookup(offset)
        found = next(((p, h) for p, h in log.batches(position) if h.last_offset >= offset), None)
        if found is None:
            reports.time_offset_missing(path, offset, -1)
        elif found[1].last_offset != offset:
            reports.time_offset_missing(path, offset, found[1].last_offset)
        else:
            max_ts = max((r.timestamp for r in records.iter_records(log.buf, found[0])),
                         default=-1)
            if max_ts != timestamp:
                reports.time_mismatch(path, timestamp, max_ts)
            if previous_ts >= timestamp:
                reports.time_out_of_order_entry(path, timestamp, previous_ts)
        if not args.verify_index_only:
            out.write(fmt.time_index_line(timestamp, offset) + "\n")
        previous_ts = timestamp


def dump_txn_index(path: str, out: IO[str]) -> None:
    for txn in txn_index.read_entries(path):
        out.write(fmt.txn_index_line(txn) + "\n")


def dump_snapshot(path: str, out: IO[str], err: IO[str]) -> None:
    try:
        entries = producer_snapshot.read(path)
    except producer_snapshot.SnapshotError as e:
        err.write(f"{e}\n")         # Kafka prints a corrupt snapshot's reason and goes on
        return
    for entry in entries:
        out.write(fmt.snapshot_line(entry) + "\n")


def dump_checkpoint(path: str, out: IO[str]) -> None:
    if os.path.basename(path) == filenames.LEADER_EPOCH_CHECKPOINT:
        for epoch, start in checkpoints.read_epochs(path):
            out.write(f"epoch: {epoch} startOffset: {start}\n")
        return
    for (topic, partition), offset in sorted(checkpoints.read_offsets(path).items()):
        out.write(f"topic: {topic} partition: {partition} offset: {offset}\n")


def dump_file(path: str, args: Namespace, parser: Parser | None, reports: fmt.Reports,
              out: IO[str], err: IO[str]) -> None:
    name = os.path.basename(path)
    suffix = name[name.rfind("."):] if "." in name else ""
    if suffix == filenames.LOG:
        dump_log(path, args, parser, reports, out)
    elif suffix == filenames.INDEX:
        dump_index(path, args, reports, out)
    elif suffix == filenames.TIME_INDEX:
        dump_time_index(path, args, reports, out)
    elif suffix == filenames.TXN_INDEX:
        dump_txn_index(path, out)
    elif suffix == filenames.SNAPSHOT:
        dump_snapshot(path, out, err)
    elif name == filenames.LEADER_EPOCH_CHECKPOINT or name in OFFSET_CHECKPOINTS:
        dump_checkpoint(path, out)
    else:
        err.write(f"Ignoring unknown file {path}\n")


# -- the command ----------------------------------------------------------------------------

FILE_ERRORS = (OSError, ValueError, RecordError, DecodeError, CorruptIndexError,
               txn_index.CorruptTxnIndex, checkpoints.CheckpointError, ToolError)


def _silence_stdout(out: IO[str]) -> None:
    """After EPIPE on the process's stdout, point it at /dev/null so that the flush at
    exit does not complain again."""
    if out is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, list(argv), out, err)
    if isinstance(args, int):
        return args
    try:
        parser = message_parser(args, out) if args.print_contents else None
    except ToolError as e:
        err.write(f"{e}\n")
        return 1
    reports = fmt.Reports()
    status = 0
    for path in args.file_list:
        try:
            out.write(f"Dumping {path}\n")
            dump_file(path, args, parser, reports, out, err)
        except BrokenPipeError:             # the reader went away (``| head``): stop quietly
            _silence_stdout(out)
            return 1
        except FILE_ERRORS as e:
            out.flush()
            err.write(f"{path}: {e}\n")
            status = 1
    reports.write(err)
    return status


__all__ = ["build_parser", "dump_file", "main"]
