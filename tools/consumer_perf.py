"""``pybroker consumer-perf-test``: Kafka's kafka-consumer-perf-test (ConsumerPerformance).

    pybroker consumer-perf-test --bootstrap-server HOST:PORT --topic T --messages N
        [--group G] [--from-latest] [--timeout MS] [--show-detailed-stats]
        [--reporting-interval MS] [--date-format FMT] [--hide-header]
        [--consumer.config FILE]

Joins group G (default ``perf-consumer-<random>``) as one member
(``client.group_consumer.GroupConsumer``, auto-commit on, positions from the
group's commits or the earliest offsets; --from-latest: the latest) and
reads until it has N records or no record came for --timeout ms (10000),
then prints, as Kafka 3.9's tool:

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2026-01-01 10:00:00:000, 2026-01-01 10:00:02:500, 9.5367, 3.8147, 100000, 40000.0000, 310, 2190, 4.3547, 45662.1005

MB counts keys and values (2^20 bytes); rebalance.time.ms is the time spent
joining the group; fetch.* are over the rest. With --show-detailed-stats the
header is ``time, threadId, data.consumed.in.MB, MB.sec, ...`` and a line is
printed every --reporting-interval ms (5000) instead of the final one. One
difference from Kafka's: the count stops at exactly N records (Kafka's counts
the whole last poll). Fewer than N before the timeout prints Kafka's
WARNING line first and still reports what was read.
"""

from __future__ import annotations

import random
import re
import time
from argparse import Namespace
from datetime import datetime
from typing import IO

from client import KafkaAdmin
from client.consumer import EARLIEST, LATEST
from client.group_consumer import GroupConsumer
from tools import ToolError, ToolParser, run_tool
from tools.perf_common import load_props, security_of

HEADER_TAIL = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
MB = 1024 * 1024
POLL_MS = 100
_JAVA_DATE = re.compile(r"yyyy|MM|dd|HH|mm|ss|SSS")


def format_date(ms: float, pattern: str) -> str:
    """A java.text.SimpleDateFormat subset (yyyy MM dd HH mm ss SSS), local time."""
    t = datetime.fromtimestamp(ms / 1000)
    fields = {"yyyy": f"{t.year:04d}", "MM": f"{t.month:02d}", "dd": f"{t.day:02d}",
              "HH": f"{t.hour:02d}", "mm": f"{t.minute:02d}", "ss": f"{t.second:02d}",
              "SSS": f"{t.microsecond // 1000:03d}"}
    return _JAVA_DATE.sub(lambda m: fields[m.group(0)], pattern)


def header(detailed: bool) -> str:
    if detailed:
        return "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" \
            + HEADER_TAIL
    return "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, " \
        "nMsg.sec" + HEADER_TAIL


def summary_line(start_ms: float, end_ms: float, nbytes: int, messages: int, join_ms: int,
                 date_format: str) -> str:
    elapsed = max(end_ms - start_ms, 1) / 1000
    fetch_ms = int(end_ms - start_ms) - join_ms
    fetch_s = fetch_ms / 1000 if fetch_ms > 0 else float("nan")
    mb = nbytes / MB
    return (f"{format_date(start_ms, date_format)}, {format_date(end_ms, date_format)}, "
            f"{mb:.4f}, {mb / elapsed:.4f}, {messages}, {messages / elapsed:.4f}, {join_ms}, "
            f"{fetch_ms}, {_java_float(mb / fetch_s)}, {_java_float(messages / fetch_s)}")


def progress_line(now_ms: float, last_ms: float, nbytes: int, last_bytes: int, messages: int,
                  last_messages: int, join_ms: int, date_format: str) -> str:
    elapsed = max(now_ms - last_ms, 1)
    interval_mb = (nbytes - last_bytes) / MB
    fetch_ms = int(now_ms - last_ms) - join_ms
    fetch_mb_s = 0.0 if fetch_ms <= 0 else 1000 * interval_mb / fetch_ms
    fetch_msg_s = 0.0 if fetch_ms <= 0 else 1000 * (messages - last_messages) / fetch_ms
    return (f"{format_date(now_ms, date_format)}, 0, {nbytes / MB:.4f}, "
            f"{1000 * interval_mb / elapsed:.4f}, {messages}, "
            f"{1000 * (messages - last_messages) / elapsed:.4f}, {join_ms}, {fetch_ms}, "
            f"{fetch_mb_s:.4f}, {fetch_msg_s:.4f}")


def _java_float(x: float) -> str:
    return "NaN" if x != x else f"{x:.4f}"


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker consumer-perf-test", out=out, err=err,
                   description="This tool is used to verify the consumer performance.")
    p.add_argument("--bootstrap-server", required=True, metavar="server to connect to",
                   help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--topic", required=True, help="REQUIRED: The topic to consume from.")
    p.add_argument("--messages", required=True, type=int, metavar="count",
                   help="REQUIRED: The number of messages to consume.")
    p.add_argument("--group", default=f"perf-consumer-{random.randrange(100000)}",
                   metavar="gid", help="The group id to consume on.")
    p.add_argument("--from-latest", action="store_true",
                   help="If the consumer does not already have an established offset to "
                        "consume from, start with the latest message present in the log "
                        "rather than the earliest message.")
    p.add_argument("--timeout", type=int, default=10000, metavar="milliseconds",
                   help="The maximum allowed time in milliseconds between returned records.")
    p.add_argument("--show-detailed-stats", action="store_true",
                   help="If set, stats are reported for each reporting interval as "
                        "configured by reporting-interval")
    p.add_argument("--reporting-interval", type=int, default=5000, metavar="interval_ms",
                   help="Interval in milliseconds at which to print progress info.")
    p.add_argument("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", metavar="date format",
                   help="The date format to use for formatting the time field (yyyy, MM, dd, "
                        "HH, mm, ss, SSS).")
    p.add_argument("--hide-header", action="store_true",
                   help="If set, skips printing the header for the stats")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="config file",
                   help="Consumer config properties file (security.protocol, ssl.*, sasl.*, "
                        "session.timeout.ms).")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if args.messages <= 0:
        raise ToolError("--messages must be greater than 0")
    if args.reporting_interval <= 0:
        raise ToolError("Reporting interval must be greater than 0.")
    props = load_props(args.consumer_config)
    args.security = security_of(props)
    return args


async def execute(args: Namespace, out: IO[str]) -> int:
    if not args.hide_header:
        out.write(header(args.show_detailed_stats) + "\n")
    start_ms = time.time() * 1000
    messages = nbytes = 0
    async with KafkaAdmin(args.bootstrap_server, security=args.security,
                          client_id="perf-consumer-client") as admin:
        consumer = GroupConsumer(admin, args.group, [args.topic],
                                 reset_to=LATEST if args.from_latest else EARLIEST,
                                 auto_commit=True)
        try:
            last_consumed = last_report = time.time() * 1000
            last_bytes = last_messages = 0
            join_before = 0
            while messages < args.messages:
                records = await consumer.poll(POLL_MS)
                now = time.time() * 1000
                if records:
                    last_consumed = now
                elif now - last_consumed > args.timeout:
                    break
                for _, _, rec in records[:args.messages - messages]:
                    messages += 1
                    nbytes += len(rec.key or b"") + len(rec.value or b"")
                if now - last_report >= args.reporting_interval:
                    if args.show_detailed_stats:
                        out.write(progress_line(now, last_report, nbytes, last_bytes, messages,
                                                last_messages,
                                                consumer.rebalance_time_ms - join_before,
                                                args.date_format) + "\n")
                    join_before = consumer.rebalance_time_ms
                    last_report, last_bytes, last_messages = now, nbytes, messages
        finally:
            await consumer.close()
    end_ms = time.time() * 1000
    if messages < args.messages:
        out.write(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                  f"({args.timeout} ms) exceeded. You can use the --timeout option to increase "
                  "the timeout.\n")
    if not args.show_detailed_stats:
        out.write(summary_line(start_ms, end_ms, nbytes, messages, consumer.rebalance_time_ms,
                               args.date_format) + "\n")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
