"""``pybroker transactions``: Kafka's kafka-transactions, over the Kafka protocol.

    pybroker transactions --bootstrap-server HOST:PORT list [--state S ...] [--producer-id N ...]
    pybroker transactions --bootstrap-server HOST:PORT describe --transactional-id ID
    pybroker transactions --bootstrap-server HOST:PORT describe-producers --topic T --partition P
    pybroker transactions --bootstrap-server HOST:PORT find-hanging --topic T [--partition P]
        [--max-transaction-timeout MINUTES]
    pybroker transactions --bootstrap-server HOST:PORT abort --topic T --partition P
        --start-offset N

What each does (``client.transactions_admin``): ``list`` asks every broker
(ListTransactions) and merges; ``describe`` asks the id's coordinator
(DescribeTransactions); ``describe-producers`` asks the partition's leader
(DescribeProducers). ``find-hanging`` lists the transactions open on the partitions
longer than the maximum transaction timeout (default 15 minutes, Kafka's
transaction.max.timeout.ms) whose producer no coordinator has in an Ongoing
transaction holding that partition: what the coordinator forgot, and what holds the
partition's last stable offset back for ever. ``abort`` writes an ABORT marker for the
transaction open at ``--start-offset`` (WriteTxnMarkers at the leader, with the
producer's epoch and coordinator epoch from DescribeProducers), as Kafka's tool does.
Output: tab-aligned columns with Kafka's headers.
"""

from __future__ import annotations

import time
from argparse import Namespace
from typing import IO

from client import KafkaAdmin
from client.transactions_admin import TransactionsAdmin
from protocol.errors import ErrorCode
from tools import (ToolError, ToolParser, add_command_config, command_security,
                   run_tool)

DEFAULT_MAX_TIMEOUT_MIN = 15


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker transactions", out=out, err=err,
                   description="List, describe and abort transactions.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="list transactions (every broker)")
    ls.add_argument("--state", action="append", default=[], help="Ongoing, PrepareCommit, ...")
    ls.add_argument("--producer-id", action="append", default=[], type=int)
    ls.add_argument("--duration-filter", type=int, default=-1, metavar="MS",
                    help="only transactions open longer than this (ms)")
    de = sub.add_parser("describe", help="describe a transactional id")
    de.add_argument("--transactional-id", required=True)
    dp = sub.add_parser("describe-producers", help="the active producers of a partition")
    dp.add_argument("--topic", required=True)
    dp.add_argument("--partition", required=True, type=int)
    fh = sub.add_parser("find-hanging", help="transactions the coordinator forgot")
    fh.add_argument("--topic", required=True)
    fh.add_argument("--partition", type=int)
    fh.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TIMEOUT_MIN,
                    metavar="MINUTES")
    ab = sub.add_parser("abort", help="abort the transaction open at an offset")
    ab.add_argument("--topic", required=True)
    ab.add_argument("--partition", required=True, type=int)
    ab.add_argument("--start-offset", required=True, type=int)
    return p


def table(out: IO[str], header: list[str], rows: list[list[object]]) -> None:
    """Columns padded to their widest cell, as Kafka's tool prints them."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        out.write("\t".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


async def execute(args: Namespace, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        ta = TransactionsAdmin(admin)
        if args.command == "list":
            unknown, listed = await ta.list(args.state, args.producer_id, args.duration_filter)
            if unknown:
                raise ToolError(f"unknown transaction states: {', '.join(unknown)}")
            table(out, ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
                  [[t.transactional_id, t.coordinator, t.producer_id, t.state] for t in listed])
        elif args.command == "describe":
            d = await ta.describe(args.transactional_id)
            if d.error:
                raise ToolError(f"{args.transactional_id}: {ErrorCode.from_code(d.error).name}")
            now = int(time.time() * 1000)
            table(out, ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                        "TransactionState", "TransactionTimeoutMs",
                        "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                        "TopicPartitions"],
                  [[d.coordinator, d.transactional_id, d.producer_id, d.producer_epoch, d.state,
                    d.timeout_ms, d.start_time_ms if d.start_time_ms >= 0 else "None",
                    now - d.start_time_ms if d.start_time_ms >= 0 else "None",
                    ",".join(f"{t}-{p}" for t, p in d.partitions)]])
        elif args.command == "describe-producers":
            tp = (args.topic, args.partition)
            answer = (await ta.producers([tp]))[tp]
            if answer.error:
                raise ToolError(f"{tp[0]}-{tp[1]}: {ErrorCode.from_code(answer.error).name}")
            table(out, ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                        "LastTimestamp", "CurrentTransactionStartOffset"],
                  [[p.producer_id, p.producer_epoch, p.coordinator_epoch, p.last_sequence,
                    p.last_timestamp, p.current_txn_start_offset if
                    p.current_txn_start_offset >= 0 else "None"] for p in answer.producers])
        elif args.command == "find-hanging":
            await find_hanging(admin, ta, args, out)
        else:
            tp = (args.topic, args.partition)
            p = await ta.abort(tp, args.start_offset)
            out.write(f"Aborted the transaction of producer {p.producer_id} (epoch "
                      f"{p.producer_epoch}) open at offset {args.start_offset} on "
                      f"{tp[0]}-{tp[1]}\n")
    return 0


async def find_hanging(admin: KafkaAdmin, ta: TransactionsAdmin, args: Namespace,
                       out: IO[str]) -> None:
    cluster = await admin.metadata([args.topic])
    topic = cluster.topics.get(args.topic)
    if topic is None or not topic.partitions:
        raise ToolError(f"unknown topic {args.topic}")
    parts = [args.partition] if args.partition is not None else sorted(topic.partitions)
    now = int(time.time() * 1000)
    limit_ms = args.max_transaction_timeout * 60_000
    rows = []
    answers = await ta.producers([(args.topic, p) for p in parts])
    for (t, p), answer in sorted(answers.items()):
        for prod in answer.producers:
            if prod.current_txn_start_offset < 0 or now - prod.last_timestamp < limit_ms:
                continue
            _, listed = await ta.list(producer_ids=[prod.producer_id])
            open_here = False
            for txn in listed:
                if txn.state != "Ongoing":
                    continue
                d = await ta.describe(txn.transactional_id)
                open_here |= d.producer_epoch == prod.producer_epoch and (t, p) in d.partitions
            if not open_here:
                rows.append([t, p, prod.producer_id, prod.producer_epoch,
                             prod.coordinator_epoch, prod.current_txn_start_offset,
                             prod.last_timestamp, (now - prod.last_timestamp) // 60_000])
    table(out, ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                "StartOffset", "LastTimestamp", "Duration(min)"], rows)


def parse_args(argv: list[str], out: IO[str], err: IO[str]) -> Namespace:
    return build_parser(out, err).parse_args(argv)


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
