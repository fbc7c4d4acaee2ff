"""``pybroker get-offsets``: Kafka's kafka-get-offsets (GetOffsetShell), over ListOffsets.

    pybroker get-offsets --bootstrap-server HOST:PORT
        [--topic REGEX [--partitions 0,1] | --topic-partitions PATTERNS]
        [--time -1|latest|-2|earliest|-3|max-timestamp|-4|earliest-local|-5|latest-tiered|MS]
        [--exclude-internal-topics] [--command-config FILE]

Prints ``topic:partition:offset``, one line per partition, sorted as Kafka's
tool sorts (by the string ``topic-partition``). A partition without an
offset for the time asked (e.g. a timestamp after its last record, or
max-timestamp of an empty partition: offset -1) is left out, as Kafka does;
one whose ListOffsets failed is reported on stderr ("Skip getting offsets
for topic-partition t-0 due to error: ...") and left out.

Topic selection, as Kafka's:
* --topic is a regular expression matched against the whole topic name
  (default: every topic); --partitions a comma-separated list of ids
  (default: all).
* --topic-partitions is a comma-separated list of ``TOPIC_REGEX[:PARTITIONS]``
  where PARTITIONS is ``N``, ``N-M`` (M exclusive), ``N-`` or ``-M``; an
  empty topic regex matches every topic. It cannot go with --topic/--partitions.
No partition matching is an error ("Could not match any topic-partitions
with the specified filters"), exit status 1.
"""

from __future__ import annotations

import re
from argparse import Namespace
from collections.abc import Callable
from typing import IO

from client import KafkaAdmin
from tools import ToolError, ToolParser, add_command_config, command_security, \
    run_tool
from protocol.errors import ErrorCode

TIME_NAMES = {"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4,
              "latest-tiered": -5}
Filter = Callable[[str, int], bool]
_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")


def parse_time(text: str) -> int:
    if text in TIME_NAMES:
        return TIME_NAMES[text]
    try:
        value = int(text)
    except ValueError:
        raise ToolError(f"Malformed time argument {text}. Please use -1 or latest / -2 or "
                        "earliest / -3 or max-timestamp / -4 or earliest-local / -5 or "
                        "latest-tiered, or a specified long format timestamp") from None
    if value < -5:
        raise ToolError(f"Malformed time argument {text}: negative times are -1 to -5")
    return value


def _topic_matcher(pattern: str) -> Callable[[str], bool]:
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise ToolError(f"invalid topic regular expression {pattern!r}: {e}") from None
    return lambda topic: rx.fullmatch(topic) is not None


def parse_rule(spec: str) -> Filter:
    """One ``TOPIC_REGEX[:PARTITIONS]`` rule of --topic-partitions -> a filter."""
    m = _RULE.fullmatch(spec)
    if m is None:
        raise ToolError(f"Invalid rule specification: {spec}")
    topic_rx, single, lo, hi = m.groups()
    topic_ok = _topic_matcher(topic_rx or ".*")
    if single is not None and single != "":
        wanted = int(single)
        return lambda t, p: topic_ok(t) and p == wanted
    if lo is not None or hi is not None:
        if not lo and not hi:
            raise ToolError(f"Invalid range specification: {spec}")
        low = int(lo) if lo else 0
        high = int(hi) if hi else None
        return lambda t, p: topic_ok(t) and p >= low and (high is None or p < high)
    if single == "":
        raise ToolError(f"Invalid partition specification: {spec}")
    return lambda t, p: topic_ok(t)


def build_filter(args: Namespace) -> Filter:
    if args.topic_partitions is not None:
        if args.topic is not None or args.partitions is not None:
            raise ToolError("--topic-partitions cannot be used with --topic or --partitions")
        rules = [parse_rule(s) for s in args.topic_partitions.split(",")]
        return lambda t, p: any(r(t, p) for r in rules)
    topic_ok = _topic_matcher(args.topic if args.topic is not None else ".*")
    parts: set[int] = set()
    if args.partitions:
        try:
            parts = {int(x) for x in args.partitions.split(",")}
        except ValueError:
            raise ToolError(f"--partitions {args.partitions!r}: a list of partition ids "
                            "separated by commas") from None
    return lambda t, p: topic_ok(t) and (not parts or p in parts)


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker get-offsets", out=out, err=err,
                   description="An interactive shell for getting topic-partition offsets.")
    p.add_argument("--bootstrap-server", "--broker-list", required=True,
                   metavar="HOST1:PORT1,...,HOST3:PORT3",
                   help="REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
    p.add_argument("--topic-partitions", metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
                   help="Comma separated list of topic-partition patterns to get the offsets for")
    p.add_argument("--topic", help="The topic to get the offsets for. It also accepts a regular "
                                   "expression. If not present, all authorized topics are queried.")
    p.add_argument("--partitions", metavar="partition ids",
                   help="Comma separated list of partition ids to get the offsets for.")
    p.add_argument("--time", default="latest",
                   metavar="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp",
                   help="timestamp of the offsets before that (default: latest)")
    p.add_argument("--exclude-internal-topics", action="store_true",
                   help="By default, internal topics are included. If specified, internal "
                        "topics are excluded.")
    add_command_config(p)
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    args.timestamp = parse_time(args.time)
    args.keep = build_filter(args)
    return args


def format_offsets(offsets: dict[tuple[str, int], int]) -> list[str]:
    """topic:partition:offset lines, sorted by "topic-partition" as Kafka's TreeMap."""
    return [f"{t}:{p}:{o}" for (t, p), o in sorted(offsets.items(),
                                                   key=lambda kv: f"{kv[0][0]}-{kv[0][1]}")]


async def execute(args: Namespace, out: IO[str], err: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args), client_id="GetOffsetShell") as admin:
        cluster = await admin.metadata(None)
        tps = [(t, p) for t, info in cluster.topics.items()
               if info.error == ErrorCode.NONE
               and not (args.exclude_internal_topics and info.is_internal)
               for p in info.partitions if args.keep(t, p)]
        if not tps:
            raise ToolError("Could not match any topic-partitions with the specified filters")
        # -3 (max timestamp) needs ListOffsets v7+
        listed = await admin.list_offsets({tp: args.timestamp for tp in tps},
                                          min_version=7 if args.timestamp == -3 else 0)
    offsets: dict[tuple[str, int], int] = {}
    for tp, answer in listed.items():
        if answer.error != ErrorCode.NONE:
            e = ErrorCode.from_code(answer.error)
            err.write(f"Skip getting offsets for topic-partition {tp[0]}-{tp[1]} due to "
                      f"error: {e.name}: {e.message}\n")
        elif answer.offset >= 0:
            offsets[tp] = answer.offset
    for line in format_offsets(offsets):
        out.write(line + "\n")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr, pass_err=True,
                    prefix="Error occurred: ")
