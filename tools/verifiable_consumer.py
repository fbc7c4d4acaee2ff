"""``pybroker verifiable-consumer``: Kafka's VerifiableConsumer (the system tests'
consumer), printing one JSON event per line.

    pybroker verifiable-consumer --bootstrap-server HOST:PORT --topic T --group-id G
        [--max-messages N] [--session-timeout MS] [--enable-autocommit]
        [--reset-policy earliest|latest|none] [--assignment-strategy range|roundrobin|
        org.apache.kafka.clients.consumer.RangeAssignor|...RoundRobinAssignor]
        [--consumer.config FILE] [--verbose]

A member of group G (``client.group_consumer.GroupConsumer``, the classic
protocol, eager rebalancing) reading T until it has N records (-1: until
SIGTERM/SIGINT). After each poll that returned records it commits, without
--enable-autocommit, each partition's last offset + 1 (with the member's
generation). Events, keys in Kafka's order, each with ``timestamp`` (ms) and
``name``:

    {"timestamp":..,"name":"startup_complete"}
    {"timestamp":..,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}
    {"timestamp":..,"name":"partitions_revoked","partitions":[...]}
    {"timestamp":..,"name":"records_consumed","count":10,"partitions":[{"topic":"t",
     "partition":0,"count":10,"minOffset":0,"maxOffset":9}]}
    {"timestamp":..,"name":"record_data","key":..,"value":..,"topic":..,"partition":..,
     "offset":..}                                               (--verbose only)
    {"timestamp":..,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,
     "offset":10}],"success":true}             (plus "error":".." when it failed)
    {"timestamp":..,"name":"shutdown_complete"}

Keys and values are decoded as UTF-8 (Kafka's StringDeserializer; bad bytes
become U+FFFD). At shutdown the member leaves the group, which prints its
partitions as revoked, as Kafka's consumer does on close.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from argparse import Namespace
from typing import IO, Any

from client import KafkaAdmin
from client.consumer import EARLIEST, LATEST
from client.consumer_protocol import assignor_name
from client.group_consumer import GroupConsumer, GroupRecord
from tools import ToolError, ToolParser, run_tool
from tools.perf_common import int_prop, load_props, security_of
from protocol.errors import ErrorCode

RESET = {"earliest": EARLIEST, "latest": LATEST, "none": None}
POLL_MS = 500


def event(name: str, **fields: Any) -> str:
    body: dict[str, Any] = {"timestamp": int(time.time() * 1000), "name": name}
    body.update(fields)
    return json.dumps(body, separators=(",", ":"))


def _text(data: bytes | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8", "replace")


def summarize(records: list[GroupRecord]) -> list[dict[str, Any]]:
    """Per partition, in first-seen order: count, min and max offset."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for topic, partition, rec in records:
        s = out.setdefault((topic, partition), {"topic": topic, "partition": partition,
                                                "count": 0, "minOffset": rec.offset,
                                                "maxOffset": rec.offset})
        s["count"] += 1
        s["minOffset"] = min(s["minOffset"], rec.offset)
        s["maxOffset"] = max(s["maxOffset"], rec.offset)
    return list(out.values())


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker verifiable-consumer", out=out, err=err,
                   description="This tool consumes messages from a specific topic and emits "
                               "consumer events (e.g. group rebalances, received messages, and "
                               "offsets committed) as JSON objects to STDOUT.")
    p.add_argument("--bootstrap-server", "--broker-list", required=True,
                   metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                   help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--topic", required=True, metavar="TOPIC",
                   help="Consumes messages from this topic.")
    p.add_argument("--group-id", required=True, metavar="GROUP_ID",
                   help="The groupId shared among members of the consumer group")
    p.add_argument("--group-protocol", default="classic", metavar="GROUP_PROTOCOL",
                   help="Group protocol (only classic)")
    p.add_argument("--max-messages", type=int, default=-1, metavar="MAX-MESSAGES",
                   help="Consume this many messages. If -1 (the default), the consumer will "
                        "consume until the process is killed externally")
    p.add_argument("--session-timeout", type=int, default=30000, metavar="TIMEOUT_MS",
                   help="Set the consumer's session timeout")
    p.add_argument("--verbose", action="store_true",
                   help="Enable to log individual consumed records")
    p.add_argument("--enable-autocommit", action="store_true",
                   help="Enable offset auto-commit on consumer")
    p.add_argument("--reset-policy", default="earliest",
                   help="Set reset policy (must be either 'earliest', 'latest', or 'none'")
    p.add_argument("--assignment-strategy",
                   default="org.apache.kafka.clients.consumer.RangeAssignor",
                   help="Set assignment strategy (range or roundrobin, or Kafka's class names)")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="CONFIG_FILE",
                   help="Consumer config properties file (security.protocol, ssl.*, sasl.*, "
                        "heartbeat.interval.ms, auto.commit.interval.ms)")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if args.group_protocol.lower() != "classic":
        raise ToolError(f"--group-protocol {args.group_protocol}: only classic is supported")
    if args.reset_policy not in RESET:
        raise ToolError(f"Invalid value {args.reset_policy} for configuration "
                        "auto.offset.reset: String must be one of: latest, earliest, none")
    try:
        args.assignor = assignor_name(args.assignment_strategy)
    except ValueError as e:
        raise ToolError(str(e)) from None
    props = load_props(args.consumer_config)
    args.security = security_of(props)
    args.heartbeat_ms = int_prop(props, "heartbeat.interval.ms", 3000, 1)
    args.auto_commit_ms = int_prop(props, "auto.commit.interval.ms", 5000, 1)
    return args


async def execute(args: Namespace, out: IO[str], stop: asyncio.Event | None = None) -> int:
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (RuntimeError, ValueError, NotImplementedError):
            pass

    def emit(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    def listed(tps: list[tuple[str, int]]) -> list[dict[str, Any]]:
        return [{"topic": t, "partition": p} for t, p in tps]

    emit(event("startup_complete"))
    consumed = 0
    async with KafkaAdmin(args.bootstrap_server, security=args.security,
                          client_id="verifiable-consumer") as admin:
        consumer = GroupConsumer(
            admin, args.group_id, [args.topic], assignor=args.assignor,
            session_timeout_ms=args.session_timeout, heartbeat_interval_ms=args.heartbeat_ms,
            reset_to=RESET[args.reset_policy], auto_commit=args.enable_autocommit,
            auto_commit_interval_ms=args.auto_commit_ms,
            on_assigned=lambda tps: emit(event("partitions_assigned", partitions=listed(tps))),
            on_revoked=lambda tps: emit(event("partitions_revoked", partitions=listed(tps))))
        try:
            while not stop.is_set() and (args.max_messages < 0 or consumed < args.max_messages):
                records = await consumer.poll(POLL_MS)
                if not records:
                    continue
                total = len(records)
                if args.max_messages >= 0:
                    records = records[:args.max_messages - consumed]
                consumed += len(records)
                summaries = summarize(records)
                if args.verbose:
                    for topic, partition, rec in records:
                        emit(event("record_data", key=_text(rec.key), value=_text(rec.value),
                                   topic=topic, partition=partition, offset=rec.offset))
                emit(event("records_consumed", count=total, partitions=summaries))
                if not args.enable_autocommit and summaries:
                    await commit(consumer, summaries, emit)
        finally:
            await consumer.close()
    emit(event("shutdown_complete"))
    return 0


async def commit(consumer: GroupConsumer, summaries: list[dict[str, Any]], emit: Any) -> None:
    offsets = {(s["topic"], s["partition"]): s["maxOffset"] + 1 for s in summaries}
    errors = await consumer.commit(offsets)
    failed = [e for e in errors.values() if e != ErrorCode.NONE]
    fields: dict[str, Any] = {"offsets": [{"topic": t, "partition": p, "offset": o}
                                          for (t, p), o in offsets.items()]}
    if failed:
        e = ErrorCode.from_code(failed[0])
        fields["error"] = f"{e.name}: {e.message}"
    fields["success"] = not failed
    emit(event("offsets_committed", **fields))


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
