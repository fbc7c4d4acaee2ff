"""Bulk replay: read a broker's segment files directly and export them with Spark.

    python -m spark_jobs.replay --log-dirs DIR[,DIR] [--topics T,...] --output PATH
        [--from OFFSET|TIMESTAMP] [--to OFFSET|TIMESTAMP] [--master URL]
        [--isolation read_committed]
    python -m spark_jobs.replay --log-dirs DIR --to-topic T --bootstrap-server HOST:PORT
        [--command-config CLIENT.PROPERTIES] ...

This module is the job's wiring: the command line, the SparkSession, the
private ``pybroker_segments`` data source and the Parquet export. The parts:

1. Plan (driver; ``spark_jobs.segments.plan``). Every ``.log`` segment below
   its partition's checkpointed high watermark (HW) becomes one ``Segment``
   task covering ``[max(base, log start, --from offset), min(HW, --to
   offset))``. A partition without a checkpointed HW is skipped: nothing above
   the HW is ever exported. When several log dirs hold the same partition
   (replicas of one partition on several brokers) the one with the highest HW
   is read. ``--isolation read_committed`` exports committed data only: each
   partition also ends at its last stable offset (computed from the batch
   headers) and its aborted transactions (``.txnindex``) are skipped; control
   batches are never exported either way.
2. Read (one Spark task per segment; ``spark_jobs.segments.segment_batches``).
   The ``.log`` file is read sequentially in chunks and walked batch by batch,
   never through the broker. Records are decoded (any codec), filtered by
   offset and by --from/--to timestamps, and turned into Arrow record batches
   in the source's schema (``spark_jobs.rows``) with no Python object per
   record (``spark_jobs.replay_arrow``: a run of batches is decompressed into
   one buffer - gzip by libdeflate in place when the system has it, else zlib -
   numpy walks its records and Arrow gathers keys, values and headers).
3. Write. Parquet, to a local/``file:`` path: each segment task writes its own
   ``PATH/topic=T/partition=P/part-*.parquet`` with pyarrow
   (``spark_jobs.replay_parquet``); to any other URI: the tasks are the
   partitions of a private Python data source (``pybroker_segments``) and
   Spark's writer writes the same layout. Either way Spark reads it back with
   the source's schema.
   Topic (``spark_jobs.replay_topic``): one task per source partition (its
   segments in order, so order within a partition is kept) produces the
   records to the target topic with our client (``client``), keeping keys,
   headers and timestamps (CreateTime), to the same partition when the target
   has enough partitions, else to murmur2(key) (records without a key: source
   partition modulo the count). Delivery is at least once: a retried Spark
   task sends its partition's records again.
4. Summary: records, bytes of segment read, seconds, MB/s.

Bounds: ``--from`` is inclusive and ``--to`` exclusive. A plain integer is an
offset (the same offset in every partition); an ISO-8601 time
(``2024-05-01T12:00:00Z``; no zone means UTC) or ``ts:<epoch ms>`` is a
timestamp, and then the records whose timestamp lies in the range are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from client.security import ClientSecurity, load_client_properties
from spark_jobs import replay_parquet, rows
from spark_jobs.replay_arrow import arrow_batches
from spark_jobs.replay_topic import replay_to_topic
from spark_jobs.segments import Bounds, Segment, make_bounds, parse_bound, plan

SOURCE_NAME = "pybroker_segments"

__all__ = ["Bounds", "SOURCE_NAME", "Segment", "SegmentSource", "build_parser",
           "export_parquet", "main", "make_bounds", "parse_bound", "plan", "replay_to_topic",
           "segments_frame", "session", "summary"]


# -- the private data source: one InputPartition per segment --------------------------------


class SegmentPartition(InputPartition):
    def __init__(self, seg: Segment) -> None:
        super().__init__(asdict(seg))
        self.seg = seg


class SegmentSource(DataSource):
    """``spark.read.format("pybroker_segments").option("plan", json).option("bounds", json)``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return rows.schema(True)

    def reader(self, schema: StructType) -> DataSourceReader:
        tasks = [Segment(**d) for d in json.loads(self.options["plan"])]
        return SegmentReader(tasks, Bounds(**json.loads(self.options.get("bounds", "{}"))))


class SegmentReader(DataSourceReader):
    def __init__(self, tasks: list[Segment], bounds: Bounds) -> None:
        self.tasks = tasks
        self.bounds = bounds

    def partitions(self) -> list[InputPartition]:
        return [SegmentPartition(t) for t in self.tasks]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, SegmentPartition)
        yield from arrow_batches(partition.seg, self.bounds)


def segments_frame(spark: Any, tasks: list[Segment], bounds: Bounds) -> Any:
    """A DataFrame (the source's schema with headers) over the given segment tasks."""
    spark.dataSource.register(SegmentSource)
    return (spark.read.format(SOURCE_NAME)
            .option("plan", json.dumps([asdict(t) for t in tasks]))
            .option("bounds", json.dumps(asdict(bounds))).load())


_WRITE_CONF = {"spark.sql.optimizer.plannedWrite.enabled": "false",
               "spark.sql.maxConcurrentOutputFileWriters": "4"}


def export_parquet(spark: Any, tasks: list[Segment], bounds: Bounds, output: str,
                   mode: str = "errorifexists") -> int:
    """Write the tasks' rows as Parquet partitioned by topic and partition; -> rows written.

    A local (or ``file:``) output is written by the segment tasks themselves with
    pyarrow (spark_jobs.replay_parquet: no copy through the JVM); any other URI
    (hdfs:, s3a:, ...) through Spark's own Parquet writer.
    """
    if replay_parquet.is_local(output):
        return replay_parquet.export(spark, tasks, bounds, output, mode)
    frame = segments_frame(spark, tasks, bounds)
    # Every task holds one (topic, partition), so Spark's sort by the partition
    # columns before a partitioned write only costs time: with planned writes
    # off and concurrent writers on, each task streams into its one file.
    saved = {k: spark.conf.get(k, None) for k in _WRITE_CONF}
    for k, v in _WRITE_CONF.items():
        spark.conf.set(k, v)
    try:
        frame.write.partitionBy("topic", "partition").mode(mode).parquet(output)
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    if not tasks:
        return 0
    # Row-group metadata only: no data pages are read for a count.
    return int(spark.read.parquet(output).count())


# -- command line -------------------------------------------------------------------------

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PACKAGES = ("protocol", "storage", "client", "spark_jobs")  # what executors import
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.replay", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-dirs", required=True, help="comma-separated broker log directories")
    p.add_argument("--topics", help="comma-separated topics (default: all)")
    p.add_argument("--output", help="Parquet output path (PATH/topic=T/partition=P/)")
    p.add_argument("--mode", default="errorifexists", choices=["errorifexists", "overwrite"],
                   help="what to do when --output exists")
    p.add_argument("--from", dest="start", help="inclusive: offset, ISO-8601 time or ts:<ms>")
    p.add_argument("--to", dest="end", help="exclusive: offset, ISO-8601 time or ts:<ms>")
    p.add_argument("--to-topic", help="replay into this topic instead of writing Parquet")
    p.add_argument("--bootstrap-server", help="HOST:PORT[,HOST:PORT] for --to-topic")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties for --to-topic: security.protocol, ssl.*, sasl.*")
    p.add_argument("--compression", default="gzip", choices=sorted(CODECS),
                   help="codec of the batches produced with --to-topic")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--isolation", default="read_uncommitted",
                   choices=["read_uncommitted", "read_committed"],
                   help="read_committed: each partition up to its last stable offset, "
                        "aborted transactions dropped (default read_uncommitted: up to the HW)")
    return p


def _ship_code(spark: Any, work_dir: str) -> None:
    """On a cluster, send our packages to the executors (local mode imports them in place)."""
    import shutil
    base = os.path.join(work_dir, "pybroker-code")
    os.makedirs(base, exist_ok=True)
    for pkg in PACKAGES:
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(base, pkg), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    spark.sparkContext.addPyFile(shutil.make_archive(base, "zip", base))


def session(master: str, app: str = "pybroker-replay") -> Any:
    from pyspark.sql import SparkSession

    # Python workers inherit the JVM's environment: let them import our packages, and
    # run them on this interpreter (its packages: pyarrow, crc32c, cramjam) unless told.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = os.environ.get("PYTHONPATH", "")
    if ROOT not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, path]))
    return (SparkSession.builder.master(master).appName(app)
            .config("spark.ui.showConsoleProgress", "true")
            .config("spark.sql.sources.partitionOverwriteMode", "static")
            .getOrCreate())


def summary(count: int, nbytes: int, seconds: float, tasks: int) -> str:
    mb = nbytes / 1e6
    rate = mb / seconds if seconds > 0 else 0.0
    return (f"replay: {count} records, {nbytes} bytes of segments ({mb:.1f} MB) in {tasks} "
            f"tasks, {seconds:.2f} s, {rate:.1f} MB/s, {count / max(seconds, 1e-9):.0f} records/s")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if (args.output is None) == (args.to_topic is None):
        print("replay: give exactly one of --output or --to-topic", file=sys.stderr)
        return 2
    if args.to_topic and not args.bootstrap_server:
        print("replay: --to-topic needs --bootstrap-server", file=sys.stderr)
        return 2
    security: dict[str, str] = {}
    if args.command_config:
        try:
            security = load_client_properties(args.command_config)
            ClientSecurity.from_config(security)
        except ValueError as e:
            print(f"replay: --command-config {args.command_config}: {e}", file=sys.stderr)
            return 2
    bounds = make_bounds(args.start, args.end)
    topics = set(args.topics.split(",")) if args.topics else None
    log_dirs = [os.path.abspath(d) for d in args.log_dirs.split(",") if d]
    tasks = plan(log_dirs, topics, bounds,
                 committed_only=args.isolation == "read_committed")
    from pyspark.sql import SparkSession

    own = SparkSession.getActiveSession() is None  # called from a live session: leave it up
    spark = session(args.master)
    try:
        if not args.master.startswith("local"):
            import tempfile
            _ship_code(spark, tempfile.mkdtemp(prefix="pybroker-replay-"))
        began = time.perf_counter()
        if args.to_topic:
            count = replay_to_topic(spark, tasks, bounds, args.to_topic, args.bootstrap_server,
                                    CODECS[args.compression], security)
        else:
            count = export_parquet(spark, tasks, bounds, args.output, args.mode)
        elapsed = time.perf_counter() - began
    finally:
        if own:
            spark.stop()
    print(summary(count, sum(t.size for t in tasks), elapsed, len(tasks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
