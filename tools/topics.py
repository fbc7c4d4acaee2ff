"""``pybroker topics``: Kafka's kafka-topics (plus topic configs), over the Kafka protocol.

    pybroker topics --bootstrap-server HOST:PORT --create --topic T [--partitions N]
        [--replication-factor R] [--config k=v ...] [--replica-assignment 0:1,1:2]
        [--if-not-exists]
    pybroker topics --bootstrap-server HOST:PORT --list [--topic REGEX] [--exclude-internal]
    pybroker topics --bootstrap-server HOST:PORT --describe [--topic REGEX]
    pybroker topics --bootstrap-server HOST:PORT --alter --topic T --partitions N
        [--replica-assignment ...]
    pybroker topics --bootstrap-server HOST:PORT --delete --topic T [--if-exists]
    pybroker topics --bootstrap-server HOST:PORT --describe-configs --topic T [--all]
    pybroker topics --bootstrap-server HOST:PORT --alter-configs --topic T
        [--add-config k=v[,k=v]] [--delete-config k ...]

Output follows Kafka 3.9's TopicCommand / ConfigCommand: ``Created topic T.``,
one name per line for --list, and for --describe a topic line
``Topic: T<TAB>TopicId: ..<TAB>PartitionCount: ..<TAB>ReplicationFactor: ..<TAB>Configs: ..``
(configs whose source is not the default) followed by one
``<TAB>Topic: T<TAB>Partition: P<TAB>Leader: L<TAB>Replicas: ..<TAB>Isr: ..<TAB>Elr: N/A<TAB>LastKnownElr: N/A``
line per partition (ELR is a KRaft feature; Kafka prints N/A without it).
Errors print ``Error while executing topic command : <reason>`` and exit 1.
"""

from __future__ import annotations

import re
import uuid
from argparse import Namespace
from typing import IO

from client import (CONFIG_SOURCE_DEFAULT, OP_DELETE, OP_SET, ClusterMetadata,
                                 KafkaAdmin, NewTopic, TopicInfo)
from tools import (ToolError, ToolParser, UsageExit, add_command_config, command_security,
                   parse_key_values, run, split_config_list, streams)
from protocol.errors import ErrorCode
from protocol.primitives import uuid_text
from protocol.schema import Struct

ERROR_PREFIX = "Error while executing topic command : "
ACTIONS = ("create", "list", "describe", "alter", "delete", "describe_configs", "alter_configs")
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                  5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                  7: "CLIENT_METRICS_CONFIG"}


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker topics", out=out, err=err,
                   description="Create, delete, describe, or change a topic.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--create", action="store_true")
    act.add_argument("--list", action="store_true")
    act.add_argument("--describe", action="store_true")
    act.add_argument("--alter", action="store_true", help="change the number of partitions")
    act.add_argument("--delete", action="store_true")
    act.add_argument("--describe-configs", action="store_true")
    act.add_argument("--alter-configs", action="store_true")
    p.add_argument("--topic", help="a topic name (a regular expression for list/describe/delete)")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--replica-assignment", metavar="B:B,B:B",
                   help="per partition, comma separated; replicas of one partition colon "
                        "separated, the first being the preferred leader")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--add-config", metavar="K=V[,K=V]")
    p.add_argument("--delete-config", action="append", default=[], metavar="KEY")
    p.add_argument("--all", action="store_true", help="--describe-configs: every config")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    """Parse and check the combination of options (ToolError on a bad one)."""
    args = build_parser(out, err).parse_args(argv)
    args.action = next(a for a in ACTIONS if getattr(args, a))
    needs_topic = ("create", "alter", "delete", "describe_configs", "alter_configs")
    if args.action in needs_topic and not args.topic:
        raise ToolError(f"--{args.action.replace('_', '-')} needs --topic")
    if args.action == "alter" and args.partitions is None:
        raise ToolError("--alter needs --partitions")
    if args.partitions is not None and args.partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
        raise ToolError("The replication factor must be between 1 and 32767 inclusive")
    if args.replica_assignment and (args.partitions is not None
                                    or args.replication_factor is not None) \
            and args.action == "create":
        raise ToolError("--replica-assignment cannot be used with --partitions or "
                        "--replication-factor")
    if args.action == "alter_configs" and not (args.add_config or args.delete_config):
        raise ToolError("--alter-configs needs --add-config or --delete-config")
    args.configs = parse_key_values(args.config, "topic config")
    args.assignment = parse_assignment(args.replica_assignment) if args.replica_assignment \
        else None
    return args


def parse_assignment(text: str) -> dict[int, list[int]]:
    """'0:1,1:2' -> {0: [0, 1], 1: [1, 2]} (partition -> replica broker ids)."""
    out: dict[int, list[int]] = {}
    for index, part in enumerate(text.split(",")):
        try:
            ids = [int(b) for b in part.split(":")]
        except ValueError:
            raise ToolError(f"invalid replica assignment {text!r}") from None
        if len(set(ids)) != len(ids):
            raise ToolError(f"partition {index} has a duplicate replica in {part!r}")
        out[index] = ids
    if len({len(ids) for ids in out.values()}) > 1:
        raise ToolError("every partition needs the same number of replicas")
    return out


def topic_id_str(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString (protocol.primitives.uuid_text)."""
    return uuid_text(topic_id)


def format_topic(t: TopicInfo, configs: list[Struct] | None) -> list[str]:
    """The describe lines of one topic (topic line, then one per partition)."""
    parts = [t.partitions[p] for p in sorted(t.partitions)]
    rf = len(parts[0].replicas) if parts else 0
    shown = ",".join(f"{c.name}={c.value}" for c in (configs or [])
                     if not is_default(c) and c.value is not None)
    lines = [f"Topic: {t.name}\tTopicId: {topic_id_str(t.topic_id)}\tPartitionCount: "
             f"{len(parts)}\tReplicationFactor: {rf}\tConfigs: {shown}"]
    for p in parts:
        leader = str(p.leader) if p.leader >= 0 else "none"
        lines.append(f"\tTopic: {t.name}\tPartition: {p.partition}\tLeader: {leader}"
                     f"\tReplicas: {','.join(map(str, p.replicas))}"
                     f"\tIsr: {','.join(map(str, p.isr))}\tElr: N/A\tLastKnownElr: N/A")
    return lines


def is_default(config: Struct) -> bool:
    """v1+: ConfigSource DEFAULT_CONFIG; v0 carries IsDefault (source stays -1)."""
    if config.config_source == -1:
        return bool(config.is_default)
    return bool(config.config_source == CONFIG_SOURCE_DEFAULT)


def format_config(c: Struct) -> str:
    """ConfigCommand's entry line: name=value sensitive=.. synonyms={SOURCE:name=value, ..}."""
    value = None if c.is_sensitive else c.value
    synonyms = ", ".join(f"{CONFIG_SOURCES.get(s.source, 'UNKNOWN')}:{s.name}="
                         f"{None if c.is_sensitive else s.value}" for s in c.synonyms)
    return f"{c.name}={value} sensitive={str(bool(c.is_sensitive)).lower()} synonyms={{{synonyms}}}"


def select_topics(cluster: ClusterMetadata, pattern: str | None,
                  exclude_internal: bool) -> list[str]:
    names = sorted(n for n, t in cluster.topics.items()
                   if t.error == ErrorCode.NONE and not (exclude_internal and t.is_internal))
    if pattern is None:
        return names
    if pattern in names:
        return [pattern]
    try:
        rx = re.compile(pattern)
    except re.error:
        return []
    return [n for n in names if rx.fullmatch(n)]


def check(results: dict[str, tuple[int, str | None]]) -> None:
    for name, (code, message) in results.items():
        if code != ErrorCode.NONE:
            err = ErrorCode.from_code(code)
            raise ToolError(f"{message or err.message} ({err.name}) for topic {name!r}")


async def execute(args: Namespace, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        if args.action == "create":
            return await _create(admin, args, out)
        cluster = await admin.metadata(None)
        topics = select_topics(cluster, args.topic, args.exclude_internal)
        if args.action == "list":
            if topics:
                out.write("\n".join(topics) + "\n")
            return 0
        if not topics and args.topic and not args.if_exists:
            raise ToolError(f"Topic '{args.topic}' does not exist as expected")
        if args.action == "describe":
            configs = await admin.describe_configs(topics) if topics else {}
            for name in topics:
                cfg = configs.get(name)
                for line in format_topic(cluster.topics[name], cfg[2] if cfg else None):
                    out.write(line + "\n")
        elif args.action == "delete":
            check(await admin.delete_topics(topics))
        elif args.action == "alter":
            await _alter(admin, args, cluster, topics)
        elif args.action == "describe_configs":
            await _describe_configs(admin, args, topics, out)
        else:
            await _alter_configs(admin, args, topics, out)
    return 0


async def _create(admin: KafkaAdmin, args: Namespace, out: IO[str]) -> int:
    topic = NewTopic(args.topic,
                     -1 if args.partitions is None else args.partitions,
                     -1 if args.replication_factor is None else args.replication_factor,
                     args.assignment, args.configs)
    results = await admin.create_topics([topic])
    code, _ = results.get(args.topic, (0, None))
    if code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return 0
    check(results)
    out.write(f"Created topic {args.topic}.\n")
    return 0


async def _alter(admin: KafkaAdmin, args: Namespace, cluster: ClusterMetadata,
                 topics: list[str]) -> None:
    counts = {t: args.partitions for t in topics}
    placed = None
    if args.assignment is not None:
        placed = {}
        for t in topics:
            have = len(cluster.topics[t].partitions)
            placed[t] = [args.assignment[p] for p in sorted(args.assignment) if p >= have]
    check(await admin.create_partitions(counts, assignments=placed))


async def _describe_configs(admin: KafkaAdmin, args: Namespace, topics: list[str],
                            out: IO[str]) -> None:
    described = await admin.describe_configs(topics)
    for name in topics:
        code, message, configs = described.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, None, []))
        check({name: (code, message)})
        kind = "All" if args.all else "Dynamic"
        out.write(f"{kind} configs for topic {name} are:\n")
        for c in configs:
            if args.all or c.config_source == 1:  # DYNAMIC_TOPIC_CONFIG
                out.write(f"  {format_config(c)}\n")


async def _alter_configs(admin: KafkaAdmin, args: Namespace, topics: list[str],
                         out: IO[str]) -> None:
    adds = parse_key_values(split_config_list(args.add_config or ""), "config")
    ops: list[tuple[str, int, str | None]] = [(k, OP_SET, v) for k, v in adds.items()]
    ops += [(k, OP_DELETE, None) for k in args.delete_config]
    for name in topics:
        check({name: await admin.incremental_alter_configs(name, ops)})
        out.write(f"Completed updating config for topic {name}.\n")


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    try:
        args = parse_args(argv, out, err)
    except UsageExit as e:
        return e.status
    except ToolError as e:  # Kafka's TopicCommand prints its errors on stdout
        out.write(f"{ERROR_PREFIX}{e}\n")
        return 1
    return run(lambda: execute(args, out), out, ERROR_PREFIX)
