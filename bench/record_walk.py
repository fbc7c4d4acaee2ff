"""The record walk of produce validation, native vs pure Python (issue 28).

protocol.record_validation walks every record of every produced batch (lengths, offset
deltas, key and value lengths, headers): ``_walk`` in Python (the reference) or
``protocol/_record_walk.c`` (``record_validation.NATIVE``). This times both on the same
uncompressed batch bodies of ``--records`` records (1,000: record_checks.HEAVY_RECORDS,
the most the event loop walks inline) of about 100 bytes and about 1 KiB (16-byte keys,
no headers, one record in 10 keyless), in this process, without the timestamp deltas
(the topic defaults never check them; ``--stamps`` collects them).

    .venv/bin/python bench/record_walk.py [--runs 300] [--records 1000] [--stamps]

Figures: nanoseconds per record, the median over ``--runs`` timed calls (one call walks
one batch) after a warm-up; "native, GIL let go" is the C walk forced to let go of the
GIL as it does in a worker thread for batches over 1,000 records (release_above=0), to
show what that costs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from _env import Figures, command_line  # type: ignore[import-not-found]

from protocol import record_validation
from protocol.records import HEADER_SIZE, build_batch

SIZES = {"100 B": 100, "1 KiB": 1024}
KEY_SIZE = 16


def body_of(records: int, record_size: int) -> bytes:
    """The records section of an uncompressed batch of ``records`` records of
    ``record_size`` bytes each on average (length varint included)."""
    def build(value_size: int) -> bytes:
        now = int(time.time() * 1000)
        rows = [(None if i % 10 == 9 else b"%016d" % i, b"v" * value_size, now + i)
                for i in range(records)]
        return bytes(build_batch(rows)[HEADER_SIZE:])  # type: ignore[arg-type]

    value_size = record_size - KEY_SIZE
    overhead = len(build(value_size)) / records - record_size  # varints and attributes
    return build(value_size - round(overhead))


def ns_per_record(walk: Callable[..., Any], args: tuple[Any, ...], runs: int,
                  records: int) -> float:
    for _ in range(max(runs // 10, 3)):
        walk(*args)
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        walk(*args)
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--stamps", action="store_true", help="collect the timestamp deltas too")
    args = ap.parse_args()
    native = getattr(record_validation, "_record_walk", None)
    if native is None:
        print("note: protocol/_record_walk.c is not built (pip install -e . with a C "
              "compiler builds it); the Python walk only")
    figures = Figures({}, width=30)
    for label, size in SIZES.items():
        body = body_of(args.records, size)
        mean = len(body) / args.records
        walk_args = (body, args.records, args.stamps)
        python = ns_per_record(record_validation._walk, walk_args, max(args.runs // 10, 10),
                               args.records)
        figures.report(f"python, {label} records", python, "ns/record",
                       f"({mean:.0f}-byte records)")
        if native is None:
            continue
        assert native.walk(*walk_args) == record_validation._walk(*walk_args)
        fast = ns_per_record(native.walk, walk_args, args.runs, args.records)
        figures.report(f"native, {label} records", fast, "ns/record",
                       f"({python / fast:.0f}x faster)")
        released = ns_per_record(native.walk, walk_args + (0,), args.runs, args.records)
        figures.report(f"native, GIL let go, {label}", released, "ns/record")
    print(f"median of {args.runs} calls (python: {max(args.runs // 10, 10)}), "
          f"{args.records} records a batch, uncompressed; "
          f"record_validation.NATIVE={record_validation.NATIVE}")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
