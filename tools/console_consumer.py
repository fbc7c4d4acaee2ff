"""``pybroker console-consumer``: print a topic's records (Kafka's kafka-console-consumer).

    pybroker console-consumer --bootstrap-server HOST:PORT --topic T
        [--partition N] [--from-beginning | --offset N|earliest|latest]
        [--max-messages N] [--timeout-ms N] [--isolation-level read_committed]
        [--property print.key=true --property key.separator=:]
        [--property print.partition=true|print.offset=true|print.timestamp=true|
                    print.headers=true|print.value=false]

No consumer group (groups come later): every partition of the topic, or the one
given, is read straight from its leader with ListOffsets + Fetch by
``client.consumer.Consumer`` (which also skips control and aborted batches under
read_committed and follows moving leaders); ``--group``
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

import time
from argparse import Namespace
from dataclasses import dataclass
from typing import IO, Any

from client import KafkaAdmin
from client.consumer import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, Consumer
from tools import (ToolError, ToolParser, add_command_config, command_security,
                   parse_key_values, run_tool)
from protocol import records

ISOLATION = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
MAX_WAIT_MS = 500


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
    add_command_config(p, "--consumer.config")
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
    p.add_argument("--consumer-property", "--command-property", action="append", default=[],
                   metavar="KEY=VALUE", help="client properties over --command-config's; "
                   "security.protocol, ssl.* and sasl.* are used, the rest ignored")
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


async def execute(args: Namespace, out: IO[str], err: IO[str]) -> int:
    count = 0
    security = command_security(args, parse_key_values(args.consumer_property))
    async with KafkaAdmin(args.bootstrap_server, security=security) as admin:
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
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr, pass_err=True)
