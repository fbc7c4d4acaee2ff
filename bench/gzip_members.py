"""The bounded gzip reader of produce validation, native vs pure Python (issue 28).

A gzip batch's records are inflated by protocol.compression under a bound on the output:
``_gzip_decompress_bounded`` in Python (the reference), or protocol/_gzip_members.c
(``compression.NATIVE_GZIP``), which reads the same member headers and trailers itself
and lets go of the GIL for inputs over 64 KiB. Two inputs, both 1 MB-ish:

* one member of 4 MiB of text-like bytes (what a producer sends: one stream a batch);
* 50,000 one-byte members (hostile: the Python reader's per-member loop held the GIL
  ~125 ms for it in a worker thread, make fuzz's event-loop stalls).

    .venv/bin/python bench/gzip_members.py [--runs 15]

Figures: milliseconds per call, the median over ``--runs`` calls after a warm-up.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from collections.abc import Callable

from _env import Figures, command_line  # type: ignore[import-not-found]

from protocol import compression

BOUND = 1 << 26


def ms_per_call(read: Callable[[bytes, int], bytes], data: bytes, runs: int) -> float:
    read(data, BOUND)
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        read(data, BOUND)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    inputs = {
        "one 4 MiB member": gzip.compress(b"".join(b"record %08d value " % i
                                                   for i in range(220_000))[:4 << 20]),
        "50,000 one-byte members": gzip.compress(b"x") * 50_000,
    }
    figures = Figures({}, width=34)
    for label, data in inputs.items():
        python = ms_per_call(compression._gzip_decompress_bounded, data, args.runs)
        figures.report(f"python, {label}", python, "ms", f"({len(data):,} bytes in)")
        if compression._gzip_members is None:
            continue
        assert (compression._gzip_decompress_native(data, BOUND)
                == compression._gzip_decompress_bounded(data, BOUND))
        native = ms_per_call(compression._gzip_decompress_native, data, args.runs)
        figures.report(f"native, {label}", native, "ms", f"({python / native:.1f}x faster)")
    if compression._gzip_members is None:
        print("note: protocol/_gzip_members.c is not built (pip install -e . with a C "
              "compiler and zlib.h builds it); the Python reader only")
    print(f"median of {args.runs} calls; compression.NATIVE_GZIP={compression.NATIVE_GZIP}")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
