"""Bulk replay: read a broker's segment files directly and export them with Spark.

    python -m spark_jobs.replay --log-dirs DIR[,DIR] [--topics T,...] --output PATH
        [--from OFFSET|TIMESTAMP] [--to OFFSET|TIMESTAMP] [--master URL]
    python -m spark_jobs.replay --log-dirs DIR --to-topic T --bootstrap-server HOST:PORT ...

Theory of operation:

1. Plan (driver). Each log dir's ``replication-offset-checkpoint`` gives every
   partition's high watermark (HW) and ``log-start-offset-checkpoint`` its log
   start. Partition dirs ``<topic>-<partition>`` are listed (``-delete`` /
   ``-future`` dirs and ``.deleted``/``.cleaned``/``.swap`` files skipped), and
   every ``.log`` segment becomes one ``Segment`` task covering
   ``[max(base, log start, --from offset), min(HW, --to offset))``; segments
   wholly outside that range are dropped. A partition without a checkpointed
   HW is skipped: nothing above the HW is ever exported, and an unknown HW
   exports nothing. When several log dirs hold the same partition (replicas
   of one partition on several brokers) the one with the highest HW is read.
2. Read (one Spark task per segment). The ``.log`` file is read sequentially in
   chunks and walked with ``protocol.records.iter_batches``; the walk stops at
   the first batch whose base offset reaches the task's end (offsets only grow
   in a segment), at a torn tail or at preallocated zeros. Records are decoded
   (any codec), filtered by offset and by --from/--to timestamps, and turned
   into Arrow record batches in the source's schema (``spark_jobs.rows``) -
   never through the broker, and with no Python object per record
   (``spark_jobs.replay_arrow``: a run of batches is decompressed into one
   buffer - gzip by libdeflate in place when the system has it, else zlib -
   numpy walks its records and Arrow gathers keys, values and headers).
3. Write. Parquet, to a local/``file:`` path: each segment task writes its own
   ``PATH/topic=T/partition=P/part-*.parquet`` with pyarrow
   (``spark_jobs.replay_parquet``); to any other URI: the tasks are the
   partitions of a private Python data source (``pybroker_segments``) and
   Spark's writer writes the same layout. Either way Spark reads it back with
   the source's schema.
   Topic: one task per source partition (its segments in order, so order
   within a partition is kept) produces the records to the target topic with the broker's
   own client (``client``), keeping keys, headers and timestamps
   (CreateTime), to the same partition when the target has enough partitions,
   else to murmur2(key) (records without a key: source partition modulo the
   count). Delivery is at least once: a retried Spark task sends its
   partition's records again.
4. Summary: records, bytes of segment read, seconds, MB/s.

Bounds: ``--from`` is inclusive and ``--to`` exclusive. A plain integer is an
offset (the same offset in every partition); an ISO-8601 time
(``2024-05-01T12:00:00Z``; no zone means UTC) or ``ts:<epoch ms>`` is a
timestamp, and then the records whose timestamp lies in the range are kept.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from protocol import records
from storage import checkpoints, filenames

CHUNK = 8 << 20            # bytes read from a segment at a time
SOURCE_NAME = "pybroker_segments"
NO_LIMIT = (1 << 63) - 1


# -- bounds --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bounds:
    """Offsets [from_offset, to_offset) and timestamps [from_ts, to_ts), all inclusive-exclusive."""

    from_offset: int = 0
    to_offset: int = NO_LIMIT
    from_ts: int | None = None
    to_ts: int | None = None

    def keeps_timestamp(self, ts: int) -> bool:
        return ((self.from_ts is None or ts >= self.from_ts)
                and (self.to_ts is None or ts < self.to_ts))


def parse_bound(text: str) -> tuple[str, int]:
    """("offset", n) for an integer; ("timestamp", ms) for ``ts:<ms>`` or ISO-8601."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return "offset", int(text)
    if text.startswith("ts:"):
        return "timestamp", int(text[3:])
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither an offset nor a timestamp (ISO-8601 or ts:<ms>)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return "timestamp", round(when.timestamp() * 1000)


def make_bounds(start: str | None, end: str | None) -> Bounds:
    values: dict[str, int] = {}
    for text, side in ((start, "from"), (end, "to")):
        if text is not None:
            kind, n = parse_bound(text)
            values[f"{side}_{'offset' if kind == 'offset' else 'ts'}"] = n
    return Bounds(**values)


# -- planning ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """One task: the records [start, end) of one segment file, as a plain picklable value."""

    topic: str
    partition: int
    path: str
    base_offset: int
    start: int
    end: int
    size: int      # bytes of the batches the task reads (the whole file when no bound cuts it)


def _partition_dirs(log_dir: str, topics: set[str] | None) -> Iterator[tuple[str, int, str]]:
    for name in sorted(os.listdir(log_dir)):
        full = os.path.join(log_dir, name)
        if not os.path.isdir(full) or name.endswith((filenames.DELETE_DIR_SUFFIX,
                                                     filenames.FUTURE_DIR_SUFFIX)):
            continue
        try:
            topic, partition = filenames.parse_partition_dir(name)
        except ValueError:
            continue
        if topics is None or topic in topics:
            yield topic, partition, full


def _segment_files(part_dir: str) -> list[tuple[int, str]]:
    """(base offset, path) of the live ``.log`` files, by base offset."""
    found = []
    for name in os.listdir(part_dir):
        if name.endswith(filenames.LOG):  # ".log.deleted" etc. do not end in ".log"
            try:
                found.append((filenames.parse_base_offset(name), os.path.join(part_dir, name)))
            except ValueError:
                continue
    return sorted(found)


def plan(log_dirs: list[str], topics: set[str] | None, bounds: Bounds) -> list[Segment]:
    """Segment tasks for every partition below its checkpointed high watermark."""
    best: dict[tuple[str, int], tuple[int, int, str]] = {}  # (hw, log start, dir)
    for log_dir in log_dirs:
        hws = checkpoints.read_offsets(os.path.join(log_dir, filenames.REPLICATION_CHECKPOINT))
        starts = checkpoints.read_offsets(os.path.join(log_dir, filenames.LOG_START_CHECKPOINT))
        for topic, partition, part_dir in _partition_dirs(log_dir, topics):
            hw = hws.get((topic, partition))
            if hw is None:
                print(f"replay: {topic}-{partition} in {log_dir} has no checkpointed high "
                      "watermark; skipped", file=sys.stderr)
                continue
            seen = best.get((topic, partition))
            if seen is None or hw > seen[0]:
                best[(topic, partition)] = (hw, starts.get((topic, partition), 0), part_dir)
    tasks: list[Segment] = []
    for (topic, partition), (hw, log_start, part_dir) in sorted(best.items()):
        lo = max(log_start, bounds.from_offset)
        hi = min(hw, bounds.to_offset)
        files = _segment_files(part_dir)
        for i, (base, path) in enumerate(files):
            nxt = files[i + 1][0] if i + 1 < len(files) else NO_LIMIT
            start, end = max(lo, base), min(hi, nxt)
            if start < end:
                size = os.path.getsize(path) if start == base and end == nxt \
                    else _bytes_between(path, start, end)
                tasks.append(Segment(topic, partition, path, base, start, end, size))
    return tasks


def _bytes_between(path: str, start: int, end: int) -> int:
    """Bytes of the batches of a segment holding offsets in [start, end): a walk over
    batch headers only (seek from one to the next), for the segments a bound cuts."""
    total = 0
    with open(path, "rb") as f:
        pos = 0
        while True:
            f.seek(pos)
            raw = f.read(records.HEADER_SIZE)
            if len(raw) < records.HEADER_SIZE:
                return total
            header = records.read_header(raw)
            if header.batch_length < records.MIN_BATCH_LENGTH or header.base_offset >= end:
                return total
            if header.last_offset >= start:
                total += header.size
            pos += header.size


# -- reading a segment ------------------------------------------------------------------------

def segment_batches(seg: Segment) -> Iterator[tuple[Any, int, records.BatchHeader]]:
    """(buffer, position, header) of each batch of ``seg`` that may hold offsets in [start, end).

    Reads the file front to back in CHUNK pieces; a batch cut by a chunk
    boundary is carried into the next piece. Stops at the first batch at or
    beyond ``end``, at end of file, and at a header whose length cannot be a
    batch (preallocated zeros or a torn tail that recovery has not cut yet).
    """
    with open(seg.path, "rb", buffering=0) as f:
        carry = b""
        while True:
            chunk = f.read(CHUNK)
            buf = carry + chunk if carry else chunk
            done = 0
            for pos, header in records.iter_batches(buf):
                if header.base_offset >= seg.end:
                    return
                done = pos + header.size
                if header.last_offset >= seg.start:
                    yield buf, pos, header
            rest = len(buf) - done
            if not chunk:
                return
            if rest >= records.HEADER_SIZE and \
                    records.read_header(buf, done).batch_length < records.MIN_BATCH_LENGTH:
                return
            carry = buf[done:]


def _may_hold_times(header: records.BatchHeader, bounds: Bounds) -> bool:
    """False when no record of the batch can be at or after --from's timestamp:
    every CreateTime record is <= the batch's maxTimestamp (LogAppendTime ones equal it)."""
    return bounds.from_ts is None or header.max_timestamp >= bounds.from_ts


def segment_records(seg: Segment, bounds: Bounds
                    ) -> Iterator[tuple[records.BatchHeader, list[records.Record]]]:
    """Per data batch, its records inside the task's offsets and the timestamp bounds."""
    by_time = bounds.from_ts is not None or bounds.to_ts is not None
    for buf, pos, header in segment_batches(seg):
        if header.is_control:
            continue
        if not _may_hold_times(header, bounds):
            continue
        kept = [r for r in records.iter_records(buf, pos)
                if seg.start <= r.offset < seg.end
                and (not by_time or bounds.keeps_timestamp(r.timestamp))]
        if kept:
            yield header, kept


def arrow_batches(seg: Segment, bounds: Bounds) -> Iterator[Any]:
    """The segment's rows as pyarrow RecordBatches in rows.schema(True)'s Arrow form, decoded
    a run of batches at a time with no Python object per record (spark_jobs.replay_arrow)."""
    from spark_jobs.replay_arrow import arrow_runs

    wanted = (item for item in segment_batches(seg) if _may_hold_times(item[2], bounds))
    for batch in arrow_runs(wanted, seg.start, seg.end, bounds.from_ts, bounds.to_ts,
                            seg.topic, seg.partition, arrow_schema()):
        if batch.num_rows:
            yield batch


@functools.cache
def arrow_schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    from spark_jobs.rows import schema
    return to_arrow_schema(schema(True), timezone="UTC")


# -- the private data source: one InputPartition per segment --------------------------------

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402


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
        from spark_jobs.rows import schema
        return schema(True)

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
    from spark_jobs import replay_parquet
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


# -- replay into a topic --------------------------------------------------------------------

MAX_BATCH_BYTES = 512 * 1024   # uncompressed record bytes per produced batch (< max.message.bytes)
PRODUCE_RETRIES = 8


def _target_partition(seg: Segment, key: bytes | None, count: int) -> int:
    if seg.partition < count:
        return seg.partition
    if key is None:
        return seg.partition % count
    from client.partitioner import partition_for_key
    return partition_for_key(key, count)


def produce_segment(seg: Segment, bounds: Bounds, topic: str, servers: str,
                    codec: int) -> tuple[int, int]:
    """Send the segment's records to ``topic``; -> (records, segment bytes scanned)."""
    return asyncio.run(_produce_segment(seg, bounds, topic, servers, codec))


async def _produce_segment(seg: Segment, bounds: Bounds, topic: str, servers: str,
                           codec: int) -> tuple[int, int]:
    from client import KafkaAdmin

    async with KafkaAdmin(servers) as admin:
        count = await _partition_count(admin, topic)
        pending: dict[int, records.BatchBuilder] = {}
        sizes: dict[int, int] = {}
        sent = 0
        for _header, recs in segment_records(seg, bounds):
            for r in recs:
                p = _target_partition(seg, r.key, count)
                builder = pending.setdefault(p, records.BatchBuilder(codec=codec))
                builder.append(r.key, r.value, r.timestamp, r.headers)
                sizes[p] = sizes.get(p, 0) + len(r.key or b"") + len(r.value or b"") + 16
                if sizes[p] >= MAX_BATCH_BYTES:
                    sent += await _send(admin, topic, {p: pending.pop(p)})
                    sizes[p] = 0
        if pending:
            sent += await _send(admin, topic, pending)
    return sent, seg.size


async def _partition_count(admin: Any, topic: str) -> int:
    for attempt in range(PRODUCE_RETRIES):
        cluster = await admin.metadata([topic])
        info = cluster.topics.get(topic)
        if info is not None and info.error == 0 and info.partitions:
            return len(info.partitions)
        await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
    raise RuntimeError(f"target topic {topic!r} does not exist or has no partitions")


async def _send(admin: Any, topic: str, builders: dict[int, records.BatchBuilder]) -> int:
    """Produce one batch per partition (acks=all), retrying retriable errors; -> records sent."""
    from protocol.api_keys import ApiKey
    from protocol.errors import ErrorCode
    from protocol.spec import api

    batches = {p: b.build() for p, b in builders.items()}
    counts = {p: len(b) for p, b in builders.items()}
    spec = api(ApiKey.PRODUCE).request
    s = spec.structs
    sent = 0
    for attempt in range(PRODUCE_RETRIES):
        cluster = await admin.metadata([topic])
        by_leader: dict[int, list[int]] = {}
        for p in batches:
            leader = cluster.leader(topic, p)
            by_leader.setdefault(leader.node_id if leader else -1, []).append(p)
        retry = by_leader.pop(-1, [])
        for node_id, parts in by_leader.items():
            body = spec.new(acks=-1, timeout_ms=30000, topic_data=[
                s["TopicProduceData"].new(name=topic, partition_data=[
                    s["PartitionProduceData"].new(index=p, records=batches[p]) for p in parts])])
            conn = await admin.broker_connection(node_id)
            resp = await conn.request(ApiKey.PRODUCE, body, timeout=35.0)
            for t in resp.responses:
                for pr in t.partition_responses:
                    err = ErrorCode.from_code(pr.error_code)
                    if err is ErrorCode.NONE:
                        sent += counts[pr.index]
                    elif err.retriable:
                        retry.append(pr.index)
                    else:
                        raise RuntimeError(f"produce to {topic}-{pr.index}: {err.name}: "
                                           f"{pr.error_message or err.message}")
        if not retry:
            return sent
        batches = {p: batches[p] for p in retry}
        await asyncio.sleep(min(0.1 * 2 ** attempt, 2.0))
    raise RuntimeError(f"produce to {topic}: partitions {sorted(batches)} still failing")


def replay_to_topic(spark: Any, tasks: list[Segment], bounds: Bounds, topic: str,
                    servers: str, codec: int) -> int:
    """Produce every task's records to ``topic``; -> records sent.

    Order within a source partition is kept: a partition's segments go to one
    Spark task, which sends them one after the other in offset order
    (segment tasks running side by side would interleave them).
    """
    groups: dict[tuple[str, int], list[Segment]] = {}
    for seg in tasks:
        groups.setdefault((seg.topic, seg.partition), []).append(seg)
    if not groups:
        return 0
    ordered = [sorted(segs, key=lambda s: s.base_offset) for segs in groups.values()]

    def send_all(segs: list[Segment]) -> int:
        return sum(produce_segment(seg, bounds, topic, servers, codec)[0] for seg in segs)

    rdd = spark.sparkContext.parallelize(ordered, len(ordered))
    return int(sum(rdd.map(send_all).collect()))


# -- command line -------------------------------------------------------------------------

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PACKAGES = ("protocol", "storage", "broker", "spark_jobs")
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
    p.add_argument("--compression", default="gzip", choices=sorted(CODECS),
                   help="codec of the batches produced with --to-topic")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
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
    bounds = make_bounds(args.start, args.end)
    topics = set(args.topics.split(",")) if args.topics else None
    log_dirs = [os.path.abspath(d) for d in args.log_dirs.split(",") if d]
    tasks = plan(log_dirs, topics, bounds)
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
                                    CODECS[args.compression])
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
