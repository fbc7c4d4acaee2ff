"""``pybroker console-producer``: lines from stdin become records (Kafka's kafka-console-producer).

    pybroker console-producer --bootstrap-server HOST:PORT --topic T
        [--property parse.key=true --property key.separator=:]
        [--compression-type none|gzip|snappy|lz4|zstd] [--acks all|-1|0|1]
        [--batch-size N] [--linger-ms N] [--request-timeout-ms N]

How it works:

1. Metadata for the topic (allowing auto-creation, as Kafka's producer does),
   retried while the topic has no leaders yet.
2. A reader thread feeds stdin's lines to the event loop; lines are collected
   until ``--batch-size`` records are waiting or no new line came for
   ``--linger-ms`` (so typing interactively sends each line at once).
3. Partitioning as Kafka's default partitioner: murmur2 of the key (positive
   hash modulo the partition count); records without a key stick to one
   partition per flush (KIP-480).
4. One magic-2 batch per partition (protocol.records, with the chosen codec);
   sent by ``client.producer.send_batches``: one Produce request per leader; a
   retriable partition error refreshes the metadata and resends that
   partition's batch (up to ``--retries`` times); a fatal one is reported on
   stderr and the exit status becomes 1.
"""

from __future__ import annotations

import asyncio
import threading
import time
from argparse import Namespace
from typing import IO

from client import ClusterMetadata, KafkaAdmin
from client.partitioner import StickyPartitioner
from client.producer import send_batches
from tools import (ToolError, ToolParser, add_command_config, command_security,
                   parse_or_status, parse_key_values, run, streams)
from protocol import compression
from protocol.errors import ErrorCode
from protocol.records import build_batch

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
METADATA_ATTEMPTS = 20
Record = tuple[bytes | None, bytes]


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker console-producer", out=out, err=err,
                   description="Read lines from standard input and produce them to a topic.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p, "--producer.config")
    p.add_argument("--topic", required=True)
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="parse.key=true, key.separator=<sep> (default TAB)")
    p.add_argument("--compression-type", "--compression-codec", default="none",
                   choices=sorted(CODECS))
    p.add_argument("--acks", "--request-required-acks", default="all", choices=list(ACKS))
    p.add_argument("--batch-size", type=int, default=200, help="records per flush")
    p.add_argument("--linger-ms", type=int, default=100)
    p.add_argument("--request-timeout-ms", type=int, default=30000)
    p.add_argument("--retries", type=int, default=5)
    p.add_argument("--producer-property", "--command-property", action="append", default=[],
                   metavar="KEY=VALUE", help="client properties over --command-config's; "
                   "security.protocol, ssl.* and sasl.* are used, the rest ignored")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    props = parse_key_values(args.property)
    args.parse_key = props.get("parse.key", "false").lower() == "true"
    args.key_separator = props.get("key.separator", "\t")
    if not args.key_separator:
        raise ToolError("key.separator must not be empty")
    args.codec = CODECS[args.compression_type]
    if not compression.available(args.codec):
        raise ToolError(str(compression.CompressionUnavailable(compression.Codec(args.codec))))
    args.acks_value = ACKS[args.acks]
    if args.batch_size < 1:
        raise ToolError("--batch-size must be at least 1")
    return args


def parse_line(line: str, number: int, parse_key: bool, separator: str) -> Record:
    """One input line (without its newline) -> (key, value) bytes."""
    if not parse_key:
        return None, line.encode("utf-8")
    key, sep, value = line.partition(separator)
    if not sep:
        raise ToolError(f"No key separator found on line number {number}: '{line}'")
    return key.encode("utf-8"), value.encode("utf-8")


class Producer:
    """Sends groups of records to the partitions' leaders (see the module docstring)."""

    def __init__(self, admin: KafkaAdmin, topic: str, *, acks: int = -1, codec: int = 0,
                 timeout_ms: int = 30000, retries: int = 5,
                 partitioner: StickyPartitioner | None = None) -> None:
        self.admin = admin
        self.topic = topic
        self.acks = acks
        self.codec = codec
        self.timeout_ms = timeout_ms
        self.retries = retries
        self.partitioner = partitioner or StickyPartitioner()
        self.cluster: ClusterMetadata | None = None
        self.errors: list[str] = []
        self.sent = 0

    async def refresh(self) -> ClusterMetadata:
        """Metadata until every partition of the topic has a leader."""
        for attempt in range(METADATA_ATTEMPTS):
            cluster = await self.admin.metadata([self.topic], allow_auto_create=True)
            t = cluster.topics.get(self.topic)
            if t is not None and t.error == ErrorCode.NONE and t.partitions and all(
                    cluster.leader(self.topic, p) for p in t.partitions):
                self.cluster = cluster
                return cluster
            if t is not None and t.error not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE,
                                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                err = ErrorCode.from_code(t.error)
                raise ToolError(f"topic {self.topic}: {err.name}: {err.message}")
            await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
        raise ToolError(f"topic {self.topic} has no leader for every partition "
                        "(does it exist? is auto.create.topics.enable off?)")

    async def send(self, records: list[Record]) -> None:
        if not records:
            return
        cluster = self.cluster or await self.refresh()
        count = len(cluster.topics[self.topic].partitions)
        by_partition: dict[int, list[Record]] = {}
        for key, value in records:
            p = self.partitioner.partition(self.topic, key, count)
            by_partition.setdefault(p, []).append((key, value))
        self.partitioner.new_batch(self.topic, count)
        now = int(time.time() * 1000)
        batches = {p: build_batch([(k, v, now) for k, v in recs], codec=self.codec)
                   for p, recs in by_partition.items()}
        counts = {p: len(recs) for p, recs in by_partition.items()}
        results = await send_batches(
            self.admin, {(self.topic, p): b for p, b in batches.items()}, acks=self.acks,
            timeout_ms=self.timeout_ms, retries=self.retries)
        for (_, p), result in sorted(results.items()):
            if result.error == ErrorCode.NONE:
                self.sent += counts[p]
                continue
            err = ErrorCode.from_code(result.error)
            self.errors.append(f"Error when sending {counts[p]} record(s) to topic "
                               f"{self.topic} partition {p}: {err.name}: "
                               f"{result.message or err.message}")


def _start_reader(stdin: IO[str], queue: asyncio.Queue[str | None],
                  loop: asyncio.AbstractEventLoop) -> None:
    """A daemon thread putting stdin's lines on ``queue`` (None at end of input).
    A daemon, so an interrupted producer never waits on a blocked read."""

    def pump() -> None:
        try:
            for line in iter(stdin.readline, ""):
                loop.call_soon_threadsafe(queue.put_nowait, line)
        except (RuntimeError, ValueError):  # loop closed / stream closed
            return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, None)
        except RuntimeError:
            pass

    threading.Thread(target=pump, name="console-producer-stdin", daemon=True).start()


async def execute(args: Namespace, stdin: IO[str], err: IO[str]) -> int:
    security = command_security(args, parse_key_values(args.producer_property))
    async with KafkaAdmin(args.bootstrap_server, timeout=args.request_timeout_ms / 1000 + 5,
                          security=security) as admin:
        producer = Producer(admin, args.topic, acks=args.acks_value, codec=args.codec,
                            timeout_ms=args.request_timeout_ms, retries=args.retries)
        await producer.refresh()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        _start_reader(stdin, queue, asyncio.get_running_loop())
        pending: list[Record] = []
        number = 0
        linger = args.linger_ms / 1000
        while True:
            try:
                line = await asyncio.wait_for(queue.get(), linger) if pending \
                    else await queue.get()
            except asyncio.TimeoutError:
                await producer.send(pending)
                pending = []
                continue
            if line is None:
                break
            number += 1
            pending.append(parse_line(line.rstrip("\r\n"), number, args.parse_key,
                                      args.key_separator))
            if len(pending) >= args.batch_size:
                await producer.send(pending)
                pending = []
        await producer.send(pending)
        for message in producer.errors:
            err.write(message + "\n")
        return 1 if producer.errors else 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    inp, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, argv, out, err)
    if isinstance(args, int):
        return args
    return run(lambda: execute(args, inp, err), err)
