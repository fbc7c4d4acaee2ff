"""Bulk replay benchmark: 1 GiB of gzip segments to Parquet on local[2], in MB/s.

Run from the project root:  .venv/bin/python bench/spark_replay.py [--bytes N] [--data DIR]

The data comes from bench/spark_data.py's ``make_bench_log`` (3 partitions,
gzip, 64 MiB segments; the streaming-source benchmark reads the same data, so
the two figures compare). It is written once into ``--data`` (kept between
runs; default under the temp dir) - no broker is needed. The figure is the
segment bytes read divided by the wall time of the Spark job (plan, read,
decode, Parquet write, count), the SparkSession already up. The issue wants
it >= 3x the streaming source's MB/s on the same data.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.spark_data import TOPIC, make_bench_log  # noqa: E402
from spark_jobs import replay  # noqa: E402

GIB = 1 << 30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=GIB)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "pybroker-bench-spark"))
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    began = time.perf_counter()
    made = make_bench_log(args.data, args.bytes)
    print(f"data: {made['records']} records, {made['bytes']} bytes in {args.data} "
          f"({time.perf_counter() - began:.1f} s to write or find)")
    spark = replay.session(args.master, "bench-spark-replay")
    spark.sparkContext.setLogLevel("ERROR")
    out = tempfile.mkdtemp(prefix="replay-bench-out-")
    try:
        began = time.perf_counter()
        tasks = replay.plan([args.data], {TOPIC}, replay.Bounds())
        count = replay.export_parquet(spark, tasks, replay.Bounds(), out, mode="overwrite")
        elapsed = time.perf_counter() - began
    finally:
        spark.stop()
        shutil.rmtree(out, ignore_errors=True)
    nbytes = sum(t.size for t in tasks)
    assert count == made["records"], (count, made)
    print(replay.summary(count, nbytes, elapsed, len(tasks)))
    print(f"bulk replay to Parquet ({args.master}): {nbytes / 1e6 / elapsed:.1f} MB/s "
          f"of segments")
    print(f"command: .venv/bin/python bench/spark_replay.py --bytes {args.bytes} "
          f"--master '{args.master}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
