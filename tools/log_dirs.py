"""``pybroker log-dirs``: Kafka's kafka-log-dirs (LogDirsCommand), over DescribeLogDirs.

    pybroker log-dirs --bootstrap-server HOST:PORT --describe
        [--broker-list 0,1,2] [--topic-list t1,t2] [--command-config FILE]

Asks every broker named in --broker-list (default: every broker in the
cluster's Metadata) for its log dirs (``client.operator_admin``) and prints,
as Kafka 3.9 does:

    Querying brokers for log directories information
    Received log directory information from brokers 0,1,2
    {"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/data/kafka-0",
     "error":null,"partitions":[{"partition":"t-0","size":1234,"offsetLag":0,
     "isFuture":false}]}]}]}

(the JSON on one line). ``error`` is null, or the name Kafka's admin client
gives the dir's error class (``org.apache.kafka.common.errors.KafkaStorageException``
for an offline dir). --topic-list keeps only those topics' partitions. A
broker id not in the cluster is an error naming it and the existing ones,
with exit status 1, as Kafka's tool.
"""

from __future__ import annotations

import json
from argparse import Namespace
from typing import IO, Any

from client import KafkaAdmin
from client.operator_admin import LogDirInfo, log_dirs_of_brokers
from tools import ToolError, ToolParser, add_command_config, command_security, \
    run_tool
from protocol.errors import ErrorCode

# Kafka's exception class per error code, as LogDirsCommand prints error().getClass().getName()
ERROR_CLASSES = {
    ErrorCode.KAFKA_STORAGE_ERROR: "org.apache.kafka.common.errors.KafkaStorageException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        "org.apache.kafka.common.errors.ClusterAuthorizationException",
}


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker log-dirs", out=out, err=err,
                   description="This tool helps to query log directory usage on the "
                               "specified brokers.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]",
                   help="REQUIRED: the server(s) to use for bootstrapping")
    add_command_config(p)
    p.add_argument("--describe", action="store_true",
                   help="Describe the specified log directories on the specified brokers.")
    p.add_argument("--topic-list", default="", metavar="T1,T2",
                   help='The list of topics to be queried in the form "topic1,topic2,topic3". '
                        "All topics will be queried if no topic list is specified")
    p.add_argument("--broker-list", default="", metavar="0,1,2",
                   help='The list of brokers to be queried in the form "0,1,2". All brokers in '
                        "the cluster will be queried if no broker list is specified")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    if not args.describe:
        raise ToolError("Missing required argument \"[describe]\"")
    args.topics = {t for t in args.topic_list.split(",") if t}
    try:
        args.brokers = sorted({int(b) for b in args.broker_list.split(",") if b})
    except ValueError:
        raise ToolError(f"--broker-list {args.broker_list!r}: broker ids are integers") from None
    return args


def error_name(code: int) -> str | None:
    if code == ErrorCode.NONE:
        return None
    if code in ERROR_CLASSES:
        return ERROR_CLASSES[ErrorCode.from_code(code)]
    return f"org.apache.kafka.common.errors.{ErrorCode.from_code(code).name}"


def as_json(by_broker: dict[int, list[LogDirInfo]], topics: set[str]) -> str:
    """The tool's JSON line (Kafka's key names; keys in the order Kafka documents)."""
    brokers: list[dict[str, Any]] = []
    for broker, dirs in sorted(by_broker.items()):
        brokers.append({"broker": broker, "logDirs": [{
            "logDir": d.path,
            "error": error_name(d.error),
            "partitions": [{"partition": f"{t}-{p}", "size": r.size,
                            "offsetLag": r.offset_lag, "isFuture": r.is_future}
                           for (t, p), r in sorted(d.replicas.items())
                           if not topics or t in topics]} for d in dirs]})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


async def execute(args: Namespace, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args), client_id="log-dirs-tool") as admin:
        cluster = await admin.metadata([])
        existing = sorted(cluster.brokers)
        missing = [b for b in args.brokers if b not in cluster.brokers]
        if missing:
            raise ToolError("ERROR: The given brokers do not exist from --broker-list: "
                            f"{','.join(map(str, missing))}. Current existent brokers: "
                            f"{','.join(map(str, existing))}")
        asked = args.brokers or existing
        out.write("Querying brokers for log directories information\n")
        # as Kafka's tool: every replica is asked for, --topic-list filters the answer
        by_broker = await log_dirs_of_brokers(admin, asked)
    out.write(f"Received log directory information from brokers {','.join(map(str, asked))}\n")
    out.write(as_json(by_broker, args.topics) + "\n")
    return 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
