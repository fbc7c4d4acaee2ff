"""``pybroker console-consumer``: print a topic's records (Kafka's kafka-console-consumer).

    pybroker console-consumer --bootstrap-server HOST:PORT --topic T
        [--partition N] [--from-beginning | --offset N|earliest|latest]
        [--max-messages N] [--timeout-ms N] [--isolation-level read_committed]
        [--property print.key=true --property key.separator=:]
        [--property print.partition=true|print.offset=true|print.timestamp=true|
                    print.headers=true|print.value=false]

No consumer group (groups come later): every partition of the topic, or the one
given, is read straight from its leader with ListOffsets + Fetch; ``--group``
is refused with a message saying so. Starting point: ``--offset`` (with
``--partition``), else the earliest offset with ``--from-beginning``, else the
latest. A partition whose position falls out of range is reset the same way.

Each record prints as Kafka's DefaultMessageFormatter does: the optional
fields (``CreateTime:<ts>``, ``Partition:<p>``, ``Offset:<o>``, headers, key)
each followed by the key separator, then the value (``null`` when null) and a
newline. Compressed batches of any codec are opened by protocol/records.py.
At the end ``Processed a total of N messages`` goes to stderr, as in Kafka.
"""

from __future__ import annotations

import asyncio
import time
from argparse import Namespace
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from client import KafkaConnectionError
from client import ClusterMetadata, KafkaAdmin
from tools import ToolError, ToolParser, parse_or_status, parse_key_values, run, streams
from protocol import legacy_records, records
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api

EARLIEST, LATEST = -2, -1
ISOLATION = {"read_uncommitted": 0, "read_committed": 1}
REFRESH_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
                  ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
                  ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_TOPIC_ID,
                  ErrorCode.OFFSET_NOT_AVAILABLE}
MAX_WAIT_MS = 500
PARTITION_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Format:
    print_key: bool = False
    print_value: bool = True
    print_partition: bool = False
    print_offset: bool = False
    print_timestamp: bool = False
    print_headers: bool = False
    key_separator: str = "\t"
    line_separator: str = "\n"


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker console-consumer", out=out, err=err,
                   description="Print the records of a topic.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int)
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true")
    start.add_argument("--offset", help="an offset, 'earliest' or 'latest' (needs --partition)")
    p.add_argument("--max-messages", type=int)
    p.add_argument("--timeout-ms", type=int, help="exit after this long without a record")
    p.add_argument("--isolation-level", default="read_uncommitted", choices=sorted(ISOLATION))
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--group", help="consumer groups are not supported yet")
    p.add_argument("--consumer-property", action="append", default=[],
                   help="accepted for compatibility; ignored")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if args.group is not None:
        raise ToolError("--group: this console consumer does not join groups; run without "
                        "--group (partitions are read from their leaders), or use a stock "
                        "client; `pybroker consumer-groups` manages groups")
    if args.offset is not None and args.partition is None:
        raise ToolError("The partition is required when offset is specified.")
    args.start = EARLIEST if args.from_beginning else LATEST
    if args.offset is not None:
        text = args.offset.strip().lower()
        if text in ("earliest", "latest"):
            args.start = EARLIEST if text == "earliest" else LATEST
        else:
            try:
                args.start = int(text)
            except ValueError:
                raise ToolError(f"invalid --offset {args.offset!r}: an offset, 'earliest' "
                                "or 'latest'") from None
            if args.start < 0:
                raise ToolError("--offset must not be negative")
    props = parse_key_values(args.property)

    def flag(name: str, default: bool = False) -> bool:
        return props.get(name, str(default)).lower() == "true"

    args.format = Format(flag("print.key"), flag("print.value", True), flag("print.partition"),
                         flag("print.offset"), flag("print.timestamp"), flag("print.headers"),
                         props.get("key.separator", "\t"), props.get("line.separator", "\n"))
    args.isolation = ISOLATION[args.isolation_level]
    return args


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "replace")


def format_record(rec: Any, partition: int, fmt: Format, timestamp_type: int = 0) -> str:
    """One record as DefaultMessageFormatter prints it (line separator included)."""
    parts: list[str] = []
    if fmt.print_timestamp:
        kind = "LogAppendTime" if timestamp_type == records.LOG_APPEND_TIME else "CreateTime"
        parts.append(f"{kind}:{rec.timestamp}" if rec.timestamp >= 0 else "NO_TIMESTAMP")
    if fmt.print_partition:
        parts.append(f"Partition:{partition}")
    if fmt.print_offset:
        parts.append(f"Offset:{rec.offset}")
    if fmt.print_headers:
        hs = getattr(rec, "headers", None) or []
        parts.append(",".join(f"{k}:{_text(v)}" for k, v in hs) if hs else "NO_HEADERS")
    if fmt.print_key:
        parts.append(_text(rec.key))
    line = fmt.key_separator.join(parts)
    if fmt.print_value:
        line = line + fmt.key_separator + _text(rec.value) if parts else _text(rec.value)
    return line + fmt.line_separator


def visible_records(data: Any, position: int, read_committed: bool,
                    aborted: list[tuple[int, int]]) -> Iterator[tuple[int, Any, int]]:
    """(next position, record, timestamp type) for each record at or after
    ``position`` in a fetched records buffer. Control batches and, under
    read_committed, batches of aborted transactions are skipped (``aborted``
    = (producer id, first offset) from the Fetch response; a producer's
    abort marker ends its aborted range)."""
    buf = memoryview(data)
    if len(buf) > records.MAGIC_AT and buf[records.MAGIC_AT] < 2:
        for m in legacy_records.iter_records(buf, allow_partial=True):
            if m.offset >= position:
                yield m.offset + 1, m, m.timestamp_type or 0
        return
    open_aborts: dict[int, int] = {}
    pending = sorted(aborted, key=lambda a: a[1])
    for at, header in records.iter_batches(buf):
        while pending and pending[0][1] <= header.last_offset:
            pid, first = pending.pop(0)
            open_aborts[pid] = first
        nxt = header.next_offset
        if header.is_control:
            if header.producer_id in open_aborts:
                del open_aborts[header.producer_id]
            yield nxt, None, 0
            continue
        if read_committed and header.is_transactional and header.producer_id in open_aborts:
            yield nxt, None, 0
            continue
        for rec in records.iter_records(buf, at):
            if rec.offset >= position:
                yield rec.offset + 1, rec, header.timestamp_type
        yield nxt, None, 0


class Consumer:
    """Positions per partition, advanced by Fetch from each partition's leader."""

    def __init__(self, admin: KafkaAdmin, topic: str, *, isolation: int = 0,
                 reset_to: int = LATEST) -> None:
        self.admin = admin
        self.topic = topic
        self.isolation = isolation
        self.reset_to = reset_to
        self.cluster: ClusterMetadata | None = None
        self.positions: dict[int, int] = {}
        self.max_bytes: dict[int, int] = {}

    async def refresh(self, attempts: int = 20) -> ClusterMetadata:
        for attempt in range(attempts):
            cluster = await self.admin.metadata([self.topic])
            t = cluster.topics.get(self.topic)
            if t is not None and t.error == ErrorCode.NONE and t.partitions and all(
                    cluster.leader(self.topic, p) for p in t.partitions):
                self.cluster = cluster
                return cluster
            await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
        raise ToolError(f"Topic '{self.topic}' does not exist or has partitions without a leader")

    def _by_leader(self, partitions: list[int]) -> dict[int, list[int]]:
        assert self.cluster is not None
        out: dict[int, list[int]] = {}
        for p in partitions:
            leader = self.cluster.leader(self.topic, p)
            if leader is None:
                raise ToolError(f"partition {p} of {self.topic} has no leader")
            out.setdefault(leader.node_id, []).append(p)
        return out

    async def seek(self, partitions: list[int], where: int) -> None:
        """Positions at ``where``: an offset, EARLIEST or LATEST (ListOffsets)."""
        if where >= 0:
            self.positions.update({p: where for p in partitions})
            return
        spec = api(ApiKey.LIST_OFFSETS).request
        s = spec.structs
        for node_id, parts in self._by_leader(partitions).items():
            conn = await self.admin.broker_connection(node_id)
            body = spec.new(replica_id=-1, isolation_level=self.isolation, topics=[
                s["ListOffsetsTopic"].new(name=self.topic, partitions=[
                    s["ListOffsetsPartition"].new(partition_index=p, timestamp=where)
                    for p in parts])])
            resp = await conn.request(ApiKey.LIST_OFFSETS, body)
            assert resp is not None
            for t in resp.topics:
                for pr in t.partitions:
                    if pr.error_code != ErrorCode.NONE:
                        err = ErrorCode.from_code(pr.error_code)
                        raise ToolError(f"ListOffsets for {self.topic}-{pr.partition_index}: "
                                        f"{err.name}: {err.message}")
                    offset = pr.offset if pr.old_style_offsets == [] else pr.old_style_offsets[0]
                    self.positions[pr.partition_index] = offset

    async def poll(self, max_wait_ms: int) -> list[tuple[int, Any, int]]:
        """One Fetch per leader (concurrently) -> [(partition, record, ts type)]."""
        assert self.cluster is not None
        groups = self._by_leader(sorted(self.positions))
        results = await asyncio.gather(*(self._fetch(n, ps, max_wait_ms)
                                         for n, ps in groups.items()), return_exceptions=True)
        lost = False
        out: list[tuple[int, Any, int]] = []
        for chunk in results:
            if isinstance(chunk, KafkaConnectionError):
                lost = True  # a leader went away: find the new one, as a consumer does
            elif isinstance(chunk, BaseException):
                raise chunk
            else:
                out.extend(chunk)
        if lost:
            await asyncio.sleep(0.2)
            await self.refresh()
        return out

    async def _fetch(self, node_id: int, parts: list[int],
                     max_wait_ms: int) -> list[tuple[int, Any, int]]:
        assert self.cluster is not None
        conn = await self.admin.broker_connection(node_id)
        version = conn.version_for(ApiKey.FETCH)
        topic_id = self.cluster.topics[self.topic].topic_id
        if version >= 13 and topic_id.int == 0:
            version = conn.version_for(ApiKey.FETCH, 12)
        spec = api(ApiKey.FETCH).request
        s = spec.structs
        body = spec.new(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1,
                        max_bytes=50 * 1024 * 1024, isolation_level=self.isolation,
                        session_id=0, session_epoch=-1, topics=[s["FetchTopic"].new(
                            topic=self.topic, topic_id=topic_id, partitions=[
                                s["FetchPartition"].new(
                                    partition=p, fetch_offset=self.positions[p],
                                    partition_max_bytes=self.max_bytes.get(
                                        p, PARTITION_MAX_BYTES)) for p in parts])])
        resp = await conn.request(ApiKey.FETCH, body, version,
                                  timeout=max_wait_ms / 1000 + conn.timeout)
        assert resp is not None
        if resp.error_code:
            err = ErrorCode.from_code(resp.error_code)
            raise ToolError(f"Fetch from broker {node_id}: {err.name}: {err.message}")
        out: list[tuple[int, Any, int]] = []
        for t in resp.responses:
            for pd in t.partitions:
                out.extend(await self._partition_data(pd))
        return out

    async def _partition_data(self, pd: Any) -> list[tuple[int, Any, int]]:
        p = pd.partition_index
        err = ErrorCode.from_code(pd.error_code)
        if err is ErrorCode.OFFSET_OUT_OF_RANGE:
            await self.seek([p], self.reset_to)
            return []
        if err in REFRESH_ERRORS:
            await self.refresh()
            return []
        if err is not ErrorCode.NONE:
            raise ToolError(f"Fetch {self.topic}-{p}: {err.name}: {err.message}")
        data = pd.records
        if data is None or len(data) == 0 or p not in self.positions:
            return []
        aborted = [(a.producer_id, a.first_offset) for a in (pd.aborted_transactions or [])]
        out: list[tuple[int, Any, int]] = []
        start = self.positions[p]
        for nxt, rec, ts_type in visible_records(data, start, self.isolation == 1, aborted):
            self.positions[p] = max(self.positions[p], nxt)
            if rec is not None:
                out.append((p, rec, ts_type))
        if self.positions[p] == start:  # only a partial batch: it is bigger than we asked
            self.max_bytes[p] = self.max_bytes.get(p, PARTITION_MAX_BYTES) * 2
        return out


async def execute(args: Namespace, out: IO[str], err: IO[str]) -> int:
    count = 0
    async with KafkaAdmin(args.bootstrap_server) as admin:
        consumer = Consumer(admin, args.topic, isolation=args.isolation,
                            reset_to=EARLIEST if args.from_beginning else LATEST)
        cluster = await consumer.refresh()
        partitions = sorted(cluster.topics[args.topic].partitions)
        if args.partition is not None:
            if args.partition not in partitions:
                raise ToolError(f"partition {args.partition} of {args.topic} does not exist")
            partitions = [args.partition]
        await consumer.seek(partitions, args.start)
        last = time.monotonic()
        while args.max_messages is None or count < args.max_messages:
            wait_ms = MAX_WAIT_MS
            if args.timeout_ms is not None:
                left = args.timeout_ms - (time.monotonic() - last) * 1000
                if left <= 0:
                    err.write("[pybroker] timed out waiting for a message\n")
                    break
                wait_ms = max(1, min(MAX_WAIT_MS, int(left)))
            for p, rec, ts_type in await consumer.poll(wait_ms):
                out.write(format_record(rec, p, args.format, ts_type))
                count += 1
                last = time.monotonic()
                if args.max_messages is not None and count >= args.max_messages:
                    break
            out.flush()
    err.write(f"Processed a total of {count} messages\n")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, argv, out, err)
    if isinstance(args, int):
        return args
    return run(lambda: execute(args, out, err), err)
