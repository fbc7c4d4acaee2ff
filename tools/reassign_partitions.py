"""``pybroker reassign-partitions``: Kafka's kafka-reassign-partitions, over the Kafka protocol.

    pybroker reassign-partitions --bootstrap-server HOST:PORT --generate
        --topics-to-move-json-file topics.json --broker-list 1,2,3
    pybroker reassign-partitions --bootstrap-server HOST:PORT --execute
        --reassignment-json-file plan.json [--throttle BYTES_PER_SECOND]
    pybroker reassign-partitions --bootstrap-server HOST:PORT --verify
        --reassignment-json-file plan.json
    pybroker reassign-partitions --bootstrap-server HOST:PORT --cancel
        --reassignment-json-file plan.json
    pybroker reassign-partitions --bootstrap-server HOST:PORT --list

Files as Kafka's ReassignPartitionsCommand reads them:
``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`` (a
``log_dirs`` list is accepted and must be all "any") and, for --generate,
``{"version":1,"topics":[{"topic":"t"}]}``. --execute prints the current
assignment (to roll back with) and starts the moves with
AlterPartitionReassignments; --verify reports each partition as completed or
still in progress (ListPartitionReassignments + Metadata); --list shows the
ongoing ones. Errors: one line on stderr, exit status 1.

Throttle (KIP-73, as Kafka's ReassignPartitionsCommand): --execute --throttle N
first sets, on each topic of the plan, ``leader.replication.throttled.replicas``
to every current replica of its partitions (``partition:broker``, the replicas
that may serve the move) and ``follower.replication.throttled.replicas`` to the
replicas being added; then ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` = N on every broker that holds or
receives a replica of the plan. --verify, once every partition of the plan is
done, removes the two rates from every broker of the cluster and the two lists
from the plan's topics (unless --preserve-throttles). Replicas in the ISR are
never throttled (broker/replication/throttle.py).
"""

from __future__ import annotations

import json
from argparse import Namespace
from typing import IO

from client import KafkaAdmin
from client.admin import OP_DELETE, OP_SET, RESOURCE_BROKER, RESOURCE_TOPIC
from tools import (ToolError, ToolParser, UsageExit, add_command_config, command_security,
                   run, streams)
from client.assignment import assign_replicas
from protocol.errors import ErrorCode

TopicPartition = tuple[str, int]
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker reassign-partitions", out=out, err=err,
                   description="Move partitions between brokers.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    act = p.add_mutually_exclusive_group(required=True)
    for a in ACTIONS:
        act.add_argument(f"--{a}", action="store_true")
    p.add_argument("--reassignment-json-file", metavar="FILE")
    p.add_argument("--topics-to-move-json-file", metavar="FILE")
    p.add_argument("--broker-list", metavar="1,2,3")
    p.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_SECOND",
                   help="with --execute: the inter-broker replication throttle, bytes/s")
    p.add_argument("--preserve-throttles", action="store_true",
                   help="with --verify: do not remove the throttles when done")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_plan(text: str) -> dict[TopicPartition, list[int]]:
    """The reassignment JSON -> {(topic, partition): replicas}."""
    try:
        obj = json.loads(text)
        out: dict[TopicPartition, list[int]] = {}
        for e in obj["partitions"]:
            tp = (str(e["topic"]), int(e["partition"]))
            replicas = [int(b) for b in e["replicas"]]
            dirs = e.get("log_dirs")
            if dirs is not None and (len(dirs) != len(replicas) or any(d != "any" for d in dirs)):
                raise ToolError(f"log_dirs of {tp[0]}-{tp[1]}: only \"any\" is supported")
            if tp in out:
                raise ToolError(f"Partition reassignment contains duplicate topic partitions: "
                                f"{tp[0]}-{tp[1]}")
            out[tp] = replicas
    except (ValueError, KeyError, TypeError) as e:
        raise ToolError(f"invalid reassignment JSON: {e}") from None
    if not out:
        raise ToolError("Partition reassignment list cannot be empty")
    return out


def format_plan(plan: dict[TopicPartition, list[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(plan.items())]}, separators=(",", ":"))


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


async def alter(admin: KafkaAdmin, targets: dict[TopicPartition, list[int] | None]
                ) -> dict[TopicPartition, tuple[int, str | None]]:
    (code, message), results = await admin.alter_partition_reassignments(
        targets, timeout_ms=int(admin.timeout * 1000))
    if code:
        raise ToolError(message or ErrorCode.from_code(code).message)
    return results


async def ongoing(admin: KafkaAdmin, parts: list[TopicPartition] | None
                  ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    (code, message), running = await admin.list_partition_reassignments(
        parts, timeout_ms=int(admin.timeout * 1000))
    if code:
        raise ToolError(message or ErrorCode.from_code(code).message)
    return {tp: (list(r.replicas), list(r.adding), list(r.removing))
            for tp, r in running.items()}


def _check(results: dict[TopicPartition, tuple[int, str | None]], what: str) -> None:
    bad = {tp: r for tp, r in results.items() if r[0] != ErrorCode.NONE}
    if bad:
        raise ToolError(f"Error {what} partition reassignments:\n" + "\n".join(
            f"{_tp(tp)}: {ErrorCode.from_code(c).name}: {m or ErrorCode.from_code(c).message}"
            for tp, (c, m) in sorted(bad.items())))


async def execute(args: Namespace, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        if args.action == "list":
            now = await ongoing(admin, None)
            if not now:
                out.write("No partition reassignments found.\n")
                return 0
            out.write("Current partition reassignments:\n")
            for tp, (rs, adding, removing) in sorted(now.items()):
                out.write(f"{_tp(tp)}: replicas: {','.join(map(str, rs))}. adding: "
                          f"{','.join(map(str, adding))}. removing: "
                          f"{','.join(map(str, removing))}.\n")
            return 0
        if args.action == "generate":
            return await _generate(admin, args, out)
        plan = parse_plan(_read(args.reassignment_json_file))
        if args.action == "execute":
            cluster = await admin.metadata(sorted({t for t, _ in plan}))
            current = {}
            for t, p in plan:
                info = cluster.topics.get(t)
                if info is None or p not in info.partitions:
                    raise ToolError(f"Topic {t} not found" if info is None or info.error
                                    else f"Unable to find partition: {t}-{p}")
                current[(t, p)] = list(info.partitions[p].replicas)
            out.write("Current partition replica assignment\n\n" + format_plan(current) +
                      "\n\nSave this to use as the --reassignment-json-file option during "
                      "rollback\n")
            if args.throttle >= 0:
                await set_throttles(admin, current, plan, args.throttle)
                out.write("Warning: You must run --verify periodically, until the "
                          "reassignment completes, to ensure the throttle is removed.\n"
                          f"The inter-broker throttle limit was set to {args.throttle} B/s\n")
            _check(await alter(admin, dict(plan)), "starting")
            out.write("Successfully started partition reassignments for " +
                      ",".join(_tp(tp) for tp in sorted(plan)) + "\n")
        elif args.action == "cancel":
            running = await ongoing(admin, list(plan))
            results = await alter(admin, {tp: None for tp in plan if tp in running})
            _check(results, "cancelling")
            if results:
                out.write("Successfully cancelled partition reassignments for: " +
                          ",".join(_tp(tp) for tp in sorted(results)) + "\n")
            else:
                out.write("None of the specified partition reassignments are active.\n")
        else:
            pending = await _verify(admin, plan, out)
            if not pending and not args.preserve_throttles:
                await clear_throttles(admin, plan, out)
            return pending
    return 0


async def _verify(admin: KafkaAdmin, plan: dict[TopicPartition, list[int]], out: IO[str]) -> int:
    running = await ongoing(admin, list(plan))
    cluster = await admin.metadata(sorted({t for t, _ in plan}))
    out.write("Status of partition reassignment:\n")
    pending = False
    for tp, target in sorted(plan.items()):
        info = cluster.topics.get(tp[0])
        part = info.partitions.get(tp[1]) if info else None
        if tp in running:
            out.write(f"Reassignment of partition {_tp(tp)} is still in progress.\n")
            pending = True
        elif part is not None and list(part.replicas) == target:
            out.write(f"Reassignment of partition {_tp(tp)} is completed.\n")
        else:
            have = "unknown" if part is None else ",".join(map(str, part.replicas))
            out.write(f"There is no active reassignment of partition {_tp(tp)}, but replica "
                      f"set is {have} rather than {','.join(map(str, target))}.\n")
            pending = True
    return 1 if pending else 0


def throttled_replicas(current: dict[TopicPartition, list[int]],
                       plan: dict[TopicPartition, list[int]]
                       ) -> dict[str, tuple[str, str]]:
    """topic -> (leader list, follower list) for its throttled-replicas configs: every
    current replica of a partition of the plan (each may lead the move), and each
    replica being added."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for (topic, p), target in sorted(plan.items()):
        now = current.get((topic, p), [])
        leaders.setdefault(topic, []).extend(f"{p}:{b}" for b in now)
        followers.setdefault(topic, []).extend(f"{p}:{b}" for b in target if b not in now)
    return {t: (",".join(leaders[t]), ",".join(followers[t])) for t in leaders}


async def set_throttles(admin: KafkaAdmin, current: dict[TopicPartition, list[int]],
                        plan: dict[TopicPartition, list[int]], rate: int) -> None:
    """The topic-level replica lists, then the rates on every broker of the move."""
    for topic, (leaders, followers) in sorted(throttled_replicas(current, plan).items()):
        ops: list[tuple[str, int, str | None]] = (
            [(LEADER_REPLICAS, OP_SET, leaders)] if leaders else [])
        ops.append((FOLLOWER_REPLICAS, OP_SET, followers) if followers
                   else (FOLLOWER_REPLICAS, OP_DELETE, None))
        _config_result(await admin.incremental_alter_configs(topic, ops,
                                                             resource_type=RESOURCE_TOPIC),
                       f"topic {topic}")
    brokers = sorted({b for r in [*current.values(), *plan.values()] for b in r})
    for b in brokers:
        _config_result(await admin.incremental_alter_configs(
            str(b), [(LEADER_RATE, OP_SET, str(rate)), (FOLLOWER_RATE, OP_SET, str(rate))],
            resource_type=RESOURCE_BROKER), f"broker {b}")


async def clear_throttles(admin: KafkaAdmin, plan: dict[TopicPartition, list[int]],
                          out: IO[str]) -> None:
    """Kafka's clearAllThrottles: the rates on every broker of the cluster (which
    brokers took part is not known any more), the lists on the plan's topics."""
    cluster = await admin.metadata([])
    brokers = sorted(cluster.brokers)
    topics = sorted({t for t, _ in plan})
    for b in brokers:
        _config_result(await admin.incremental_alter_configs(
            str(b), [(LEADER_RATE, OP_DELETE, None), (FOLLOWER_RATE, OP_DELETE, None)],
            resource_type=RESOURCE_BROKER), f"broker {b}")
    out.write("Clearing broker-level throttles on brokers " + ",".join(map(str, brokers)) + "\n")
    for t in topics:
        _config_result(await admin.incremental_alter_configs(
            t, [(LEADER_REPLICAS, OP_DELETE, None), (FOLLOWER_REPLICAS, OP_DELETE, None)],
            resource_type=RESOURCE_TOPIC), f"topic {t}")
    out.write("Clearing topic-level throttles on topic(s) " + ",".join(topics) + "\n")


def _config_result(result: tuple[int, str | None], what: str) -> None:
    code, message = result
    if code:
        raise ToolError(f"cannot change the throttle configs of {what}: "
                        f"{ErrorCode.from_code(code).name}: "
                        f"{message or ErrorCode.from_code(code).message}")


async def _generate(admin: KafkaAdmin, args: Namespace, out: IO[str]) -> int:
    try:
        topics = [str(e["topic"]) for e in json.loads(_read(args.topics_to_move_json_file))
                  ["topics"]]
        brokers = [int(b) for b in (args.broker_list or "").split(",") if b.strip()]
    except (ValueError, KeyError, TypeError) as e:
        raise ToolError(f"invalid --generate input: {e}") from None
    if not brokers:
        raise ToolError("--generate needs --broker-list")
    cluster = await admin.metadata(topics)
    current: dict[TopicPartition, list[int]] = {}
    proposed: dict[TopicPartition, list[int]] = {}
    for t in topics:
        info = cluster.topics.get(t)
        if info is None or info.error:
            raise ToolError(f"Topic {t} not found")
        for p, part in info.partitions.items():
            current[(t, p)] = list(part.replicas)
        rf = len(next(iter(info.partitions.values())).replicas)
        placed = assign_replicas(brokers, len(info.partitions), rf)
        proposed.update({(t, p): r for p, r in placed.items()})
    out.write("Current partition replica assignment\n" + format_plan(current) + "\n\n"
              "Proposed partition reassignment configuration\n" + format_plan(proposed) + "\n")
    return 0


def _read(path: str | None) -> str:
    if not path:
        raise ToolError("this action needs --reassignment-json-file")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ToolError(f"cannot read {path}: {e}") from None


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    try:
        args = build_parser(out, err).parse_args(argv)
    except UsageExit as e:
        return e.status
    args.action = next(a for a in ACTIONS if getattr(args, a))
    if args.action == "generate" and not args.topics_to_move_json_file:
        err.write("--generate needs --topics-to-move-json-file\n")
        return 1
    if args.throttle >= 0 and args.action != "execute":
        err.write("--throttle is only valid with --execute\n")
        return 1
    return run(lambda: execute(args, out), err)
