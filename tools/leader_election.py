"""``pybroker leader-election``: Kafka's kafka-leader-election, over the Kafka protocol.

    pybroker leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN
        (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)

The JSON file is ``{"partitions":[{"topic":"t","partition":0}]}``. One
ElectLeaders request to the controller (``KafkaAdmin.elect_leaders``); output as Kafka's LeaderElectionCommand:

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: <ERROR_NAME>: <message>

Exit status 1 when any partition failed (ELECTION_NOT_NEEDED is not a failure).
"""

from __future__ import annotations

import json
from argparse import Namespace
from typing import IO

from client import KafkaAdmin
from client.admin import PREFERRED_ELECTION, UNCLEAN_ELECTION
from tools import (ToolError, ToolParser, UsageExit, add_command_config, command_security,
                   run, streams)
from protocol.errors import ErrorCode

TYPES = {"PREFERRED": PREFERRED_ELECTION, "UNCLEAN": UNCLEAN_ELECTION}


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker leader-election", out=out, err=err,
                   description="Elect preferred or unclean leaders for partitions.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p, "--admin.config")
    p.add_argument("--election-type", required=True, type=str.upper, choices=sorted(TYPES))
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--all-topic-partitions", action="store_true")
    p.add_argument("--path-to-json-file", metavar="FILE")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def partitions_of(args: Namespace) -> list[tuple[str, int]] | None:
    """None = every partition (--all-topic-partitions)."""
    chosen = [args.all_topic_partitions, bool(args.path_to_json_file), args.topic is not None]
    if sum(chosen) != 1:
        raise ToolError("One and only one of the following options is required: "
                        "--all-topic-partitions, --path-to-json-file, --topic")
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        if args.partition is None:
            raise ToolError("--topic needs --partition")
        return [(args.topic, args.partition)]
    try:
        with open(args.path_to_json_file, encoding="utf-8") as f:
            obj = json.load(f)
        parts = [(str(e["topic"]), int(e["partition"])) for e in obj["partitions"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ToolError(f"invalid --path-to-json-file: {e}") from None
    if len(set(parts)) != len(parts):
        raise ToolError("Replica election data contains duplicate partitions")
    return parts


async def execute(args: Namespace, parts: list[tuple[str, int]] | None, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        code, results = await admin.elect_leaders(
            parts, election_type=TYPES[args.election_type], timeout_ms=int(args.timeout * 1000))
    if code:
        raise ToolError(ErrorCode.from_code(code).message or "election failed")
    done, noop, failed = [], [], []
    for (topic, partition), (error, message) in results.items():
        name = f"{topic}-{partition}"
        if error == ErrorCode.NONE:
            done.append(name)
        elif error == ErrorCode.ELECTION_NOT_NEEDED:
            noop.append(name)
        else:
            err = ErrorCode.from_code(error)
            failed.append(f"Error completing leader election ({args.election_type}) for "
                          f"partition: {name}: {err.name}: {message or err.message}")
    if done:
        out.write(f"Successfully completed leader election ({args.election_type}) for "
                  f"partitions {', '.join(done)}\n")
    if noop:
        out.write(f"Valid replica already elected for partitions {', '.join(noop)}\n")
    for line in failed:
        out.write(line + "\n")
    if failed:
        raise ToolError(f"{len(failed)} replica(s) could not be elected")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    try:
        args = build_parser(out, err).parse_args(argv)
        parts = partitions_of(args)
    except UsageExit as e:
        return e.status
    except ToolError as e:
        err.write(f"{e}\n")
        return 1
    return run(lambda: execute(args, parts, out), err)
