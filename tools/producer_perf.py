"""``pybroker producer-perf-test``: Kafka's kafka-producer-perf-test (ProducerPerformance).

    pybroker producer-perf-test --topic T --num-records N --throughput R
        (--record-size B | --payload-file F [--payload-delimiter D] | --payload-monotonic)
        (--producer-props bootstrap.servers=HOST:PORT [k=v ...] | --producer.config FILE)
        [--bootstrap-server HOST:PORT]

Sends N records (no key) through ``tools.record_pipeline`` (batches of
``batch.size`` bytes, up to ``max.in.flight.requests.per.connection`` Produce
rounds in flight, ``client.producer.send_batches`` underneath) at about R
records/s (-1: as fast as it goes). A record's latency is from the moment it
is handed to the pipeline to its acknowledgement. Output, as Kafka 3.9's:

    every 5 s, for the records acknowledged in that window:
    N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.
    at the end, for all of them:
    N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency,
    P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.

(MB = 2^20 bytes; percentiles over a sample of at most 500,000 latencies,
every ``N // min(N, 500000)``-th, as Kafka's Stats.) Only acknowledged
records count; a failed one prints its error on stderr (the first 10 and a
count), and the exit status stays 0 as Kafka's.

Payloads: --record-size B sends B random upper-case letters (drawn from a
pool of 64 such payloads made at start, so generating them does not
dominate the measurement); --payload-file picks a random line (split on
--payload-delimiter, default newline) per record; --payload-monotonic sends
the record's number. --print-metrics is not supported.

Transactions, as Kafka's tool: on with --transactional-id, --transaction-duration-ms
or ``transactional.id`` in the properties (id default
``performance-producer-<uuid>``, duration default 3000 ms). Then records go
one batch at a time through ``client.transactional.TransactionalProducer``
(its calls must not overlap, so nothing is pipelined), and the transaction is
committed once it is older than the duration, and at the end.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from argparse import Namespace
from typing import IO

from client import KafkaAdmin
from client.errors import ProducerFenced, TransactionError
from client.partitioner import StickyPartitioner
from client.transactional import State as TxnState
from client.transactional import TransactionalProducer
from tools import ToolError, ToolParser, parse_key_values, run_tool
from tools.perf_common import Throttler, load_props, partitions_of, producer_settings
from tools.record_pipeline import RECORD_OVERHEAD, RecordPipeline
from protocol.errors import ErrorCode

REPORTING_INTERVAL_MS = 5000
MAX_SAMPLES = 500000
PAYLOAD_POOL = 64
MAX_ERRORS_SHOWN = 10
DEFAULT_TRANSACTION_DURATION_MS = 3000


class Stats:
    """Kafka's ProducerPerformance.Stats: totals, a 5 s window, sampled latencies."""

    def __init__(self, num_records: int, out: IO[str], now_ms: float | None = None) -> None:
        self.out = out
        self.start = time.time() * 1000 if now_ms is None else now_ms
        self.window_start = self.start
        self.sampling = max(1, num_records // max(1, min(num_records, MAX_SAMPLES)))
        self.latencies: list[int] = []
        self.iteration = 0
        self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_latency = self.window_max = 0

    def record(self, latency: int, size: int, now_ms: float) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += size
        self.window_latency += latency
        self.window_max = max(self.window_max, latency)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency)
        if now_ms - self.window_start >= REPORTING_INTERVAL_MS:
            self.out.write(self.window_line(now_ms) + "\n")
            self.out.flush()
            self.window_start = now_ms
            self.window_count = self.window_bytes = self.window_latency = self.window_max = 0
        self.iteration += 1

    def window_line(self, now_ms: float) -> str:
        elapsed = max(now_ms - self.window_start, 1e-3)
        return (f"{self.window_count} records sent, "
                f"{1000.0 * self.window_count / elapsed:.1f} records/sec "
                f"({1000.0 * self.window_bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
                f"{self.window_latency / max(self.window_count, 1):.1f} ms avg latency, "
                f"{float(self.window_max):.1f} ms max latency.")

    def percentiles(self, *quantiles: float) -> list[int]:
        ordered = sorted(self.latencies)
        if not ordered:
            return [0 for _ in quantiles]
        return [ordered[min(int(q * len(ordered)), len(ordered) - 1)] for q in quantiles]

    def total_line(self, now_ms: float) -> str:
        elapsed = max(now_ms - self.start, 1e-3)
        p50, p95, p99, p999 = self.percentiles(0.5, 0.95, 0.99, 0.999)
        return (f"{self.count} records sent, {1000.0 * self.count / elapsed:f} records/sec "
                f"({1000.0 * self.bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
                f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, "
                f"{float(self.max_latency):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                f"{p99} ms 99th, {p999} ms 99.9th.")


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker producer-perf-test", out=out, err=err,
                   description="This tool is used to verify the producer performance.")
    p.add_argument("--topic", required=True, metavar="TOPIC",
                   help="produce messages to this topic")
    p.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS",
                   help="number of messages to produce")
    payload = p.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE",
                         help="message size in bytes")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="file to read the message payloads from (UTF-8 text); a payload "
                              "is picked at random for each message")
    payload.add_argument("--payload-monotonic", action="store_true",
                         help="payload is the message's number")
    p.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                   help="delimiter of the payloads in --payload-file (default: new line)")
    p.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                   help="throttle maximum message throughput to *approximately* THROUGHPUT "
                        "messages/sec. Set this to -1 to disable throttling.")
    p.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                   help="producer configuration properties like bootstrap.servers, client.id; "
                        "these take precedence over those of --producer.config")
    p.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                   help="producer config properties file")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="the server(s) to connect to (sets bootstrap.servers)")
    p.add_argument("--transactional-id", metavar="TRANSACTIONAL-ID",
                   help="The transactional id to use (takes precedence over transactional.id "
                        "in the properties); turns transactions on")
    p.add_argument("--transaction-duration-ms", type=int, metavar="TRANSACTION-DURATION",
                   help="The max age of each transaction: it is committed after this time "
                        f"(default {DEFAULT_TRANSACTION_DURATION_MS} when transactions are on)")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if args.num_records <= 0:
        raise ToolError("--num-records should be greater than zero")
    if args.record_size is not None and args.record_size <= 0:
        raise ToolError("--record-size should be greater than zero")
    if args.throughput == 0:
        raise ToolError("--throughput 0 would send nothing: give a positive rate or -1")
    if args.producer_props is None and args.producer_config is None \
            and args.bootstrap_server is None:
        raise ToolError("Either --producer-props or --producer.config must be specified.")
    overrides = parse_key_values(args.producer_props)
    if args.bootstrap_server:
        overrides["bootstrap.servers"] = args.bootstrap_server
    props = load_props(args.producer_config, overrides)
    args.settings = producer_settings(props, "perf-producer-client")
    if args.transaction_duration_ms is not None and args.transaction_duration_ms <= 0:
        raise ToolError("--transaction-duration-ms should be greater than zero")
    args.transactional_id = args.transactional_id or props.get("transactional.id") or (
        f"performance-producer-{uuid.uuid4()}" if args.transaction_duration_ms else None)
    if args.transactional_id and args.transaction_duration_ms is None:
        args.transaction_duration_ms = DEFAULT_TRANSACTION_DURATION_MS
    return args


def read_payloads(path: str, delimiter: str, out: IO[str]) -> list[bytes]:
    """Kafka's readPayloadFile: the file split on the delimiter, empty pieces dropped."""
    out.write(f"Reading payloads from: {os.path.abspath(path)}\n")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"--payload-file {path}: {e.strerror}") from None
    sep = "\n" if delimiter == "\\n" else delimiter
    payloads = [piece.encode() for piece in text.split(sep) if piece]
    if not payloads:
        raise ToolError("File does not exist or empty file provided.")
    out.write(f"Number of messages read: {len(payloads)}\n")
    return payloads


def random_payloads(size: int, rng: random.Random) -> list[bytes]:
    letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [bytes(rng.choice(letters) for _ in range(size))
            for _ in range(min(PAYLOAD_POOL, max(1, 2_000_000 // size)))]


async def execute(args: Namespace, out: IO[str], err: IO[str]) -> int:
    s = args.settings
    rng = random.Random(0)
    pool = (read_payloads(args.payload_file, args.payload_delimiter, out) if args.payload_file
            else random_payloads(args.record_size, rng) if args.record_size else [])
    async with KafkaAdmin(s.servers, timeout=s.timeout_ms / 1000 + 5, client_id=s.client_id,
                          security=s.security) as admin:
        cluster = await partitions_of(admin, args.topic)
        stats = Stats(args.num_records, out)
        failures: list[str] = []

        def done(token: tuple[float, int], _p: int, _o: int, error: int,
                 message: str | None) -> None:
            now = time.time() * 1000
            if error == ErrorCode.NONE:
                stats.record(int(now - token[0]), token[1], now)
                return
            failures.append(f"{ErrorCode.from_code(error).name}: "
                            f"{message or ErrorCode.from_code(error).message}")

        partitions = len(cluster.topics[args.topic].partitions)
        if args.transactional_id:
            try:
                return await run_transactional(args, admin, partitions, pool, rng, stats, out,
                                               err)
            except TransactionError as e:       # init or commit failed: nothing to go on with
                raise ToolError(f"transactional id {args.transactional_id}: {e}") from None
        pipe = RecordPipeline(admin, args.topic, partitions,
                              done, acks=s.acks, codec=s.codec, batch_size=s.batch_size,
                              max_in_flight=s.max_in_flight, retries=s.retries,
                              timeout_ms=s.timeout_ms)
        throttle = Throttler(args.throughput)
        for i in range(args.num_records):
            payload = next_payload(args, i, pool, rng)
            wait = throttle.delay(i)
            if wait > 0:
                await pipe.dispatch_open()
                await asyncio.sleep(wait)
            now = time.time() * 1000
            await pipe.add(None, payload, int(now), (now, len(payload)))
        await pipe.flush()
    for line in failures[:MAX_ERRORS_SHOWN]:
        err.write(f"Error sending a record: {line}\n")
    if len(failures) > MAX_ERRORS_SHOWN:
        err.write(f"... {len(failures) - MAX_ERRORS_SHOWN} more records failed\n")
    out.write(stats.total_line(time.time() * 1000) + "\n")
    return 0


def next_payload(args: Namespace, i: int, pool: list[bytes], rng: random.Random) -> bytes:
    return str(i).encode() if args.payload_monotonic else pool[rng.randrange(len(pool))]


async def run_transactional(args: Namespace, admin: KafkaAdmin, partitions: int,
                            pool: list[bytes], rng: random.Random, stats: Stats, out: IO[str],
                            err: IO[str]) -> int:
    """The transactional loop: batches of ``batch.size`` bytes to the sticky
    partition, one ``send`` at a time, committed every --transaction-duration-ms."""
    s = args.settings
    txn = TransactionalProducer(admin, args.transactional_id, codec=s.codec,
                                request_timeout_ms=s.timeout_ms)
    await txn.init_transactions()
    sticky = StickyPartitioner()
    batch: list[tuple[bytes | None, bytes, int]] = []
    started: list[float] = []
    batch_bytes = 0
    txn_started = 0.0
    failed = 0

    async def ship() -> None:
        nonlocal batch, started, batch_bytes, txn_started, failed
        if not batch:
            return
        if txn.state is not TxnState.IN_TRANSACTION:
            txn.begin_transaction()
            txn_started = time.monotonic()
        p = sticky.partition(args.topic, None, partitions)
        try:
            await txn.send({(args.topic, p): batch})
            now = time.time() * 1000
            for t0, rec in zip(started, batch):
                stats.record(int(now - t0), len(rec[1]), now)
        except ProducerFenced as e:
            raise ToolError(f"transactional id {args.transactional_id}: {e}") from None
        except TransactionError as e:
            failed += len(batch)
            err.write(f"Error sending a batch: {e}; aborting the transaction\n")
            await txn.abort_transaction()
        sticky.new_batch(args.topic, partitions)
        batch, started, batch_bytes = [], [], 0
        if txn.state is TxnState.IN_TRANSACTION and \
                (time.monotonic() - txn_started) * 1000 >= args.transaction_duration_ms:
            await txn.commit_transaction()

    throttle = Throttler(args.throughput)
    for i in range(args.num_records):
        payload = next_payload(args, i, pool, rng)
        wait = throttle.delay(i)
        if wait > 0:
            await ship()
            await asyncio.sleep(wait)
        now = time.time() * 1000
        batch.append((None, payload, int(now)))
        started.append(now)
        batch_bytes += len(payload) + RECORD_OVERHEAD
        if batch_bytes >= s.batch_size:
            await ship()
    await ship()
    if txn.state is TxnState.IN_TRANSACTION:
        await txn.commit_transaction()
    if failed:
        err.write(f"{failed} records failed\n")
    out.write(stats.total_line(time.time() * 1000) + "\n")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr, pass_err=True)
