"""``pybroker delete-records``: Kafka's kafka-delete-records (DeleteRecordsCommand).

    pybroker delete-records --bootstrap-server HOST:PORT --offset-json-file FILE
        [--command-config FILE]

The JSON file, as Kafka's:

    {"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}

(``offset`` -1 means the high watermark: delete everything). Each partition's
log start offset moves up to its offset at the partition's leader
(``client.operator_admin.delete_records_at_leaders``). Output, as Kafka 3.9:

    Executing records delete operation
    Records delete operation completed:
    partition: t-0	low_watermark: 10
    partition: t-1	error: <message>

A bad file (not JSON, no "partitions", a version other than 1, an entry
without topic/partition/offset, a partition twice) is an error naming the
problem, exit status 1, and nothing is deleted. A partition that failed
(e.g. OFFSET_OUT_OF_RANGE past its high watermark) is printed with its error
and makes the exit status 1.
"""

from __future__ import annotations

import json
from argparse import Namespace
from typing import IO, Any

from client import KafkaAdmin
from client.operator_admin import delete_records_at_leaders
from tools import ToolError, ToolParser, add_command_config, command_security, \
    run_tool
from protocol.errors import ErrorCode

TP = tuple[str, int]


def parse_offset_json(text: str) -> dict[TP, int]:
    """The file's contents -> (topic, partition) -> offset; ToolError when bad."""
    try:
        obj: Any = json.loads(text)
    except ValueError as e:
        raise ToolError(f"The offset JSON file is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ToolError("The offset JSON file must hold a JSON object")
    version = obj.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    entries = obj.get("partitions")
    if not isinstance(entries, list):
        raise ToolError("Missing partitions field")
    out: dict[TP, int] = {}
    duplicates: list[str] = []
    for entry in entries:
        try:
            tp = (str(entry["topic"]), int(entry["partition"]))
            offset = int(entry["offset"])
        except (KeyError, TypeError, ValueError):
            raise ToolError(f"Each partition needs topic, partition and offset: "
                            f"{entry!r}") from None
        if tp in out:
            duplicates.append(f"{tp[0]}-{tp[1]}")
        out[tp] = offset
    if duplicates:
        raise ToolError("Offset json file contains duplicate topic partitions: "
                        + ",".join(duplicates))
    return out


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker delete-records", out=out, err=err,
                   description="This tool helps to delete records of the given partitions "
                               "down to the specified offset.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]",
                   help="REQUIRED: The server to connect to.")
    p.add_argument("--offset-json-file", required=True, metavar="FILE",
                   help='REQUIRED: The JSON file with offset per partition. The format to use is:'
                        ' {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], '
                        '"version":1}')
    add_command_config(p)
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    args = build_parser(out, err).parse_args(argv)
    try:
        with open(args.offset_json_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"--offset-json-file {args.offset_json_file}: {e.strerror}") from None
    args.offsets = parse_offset_json(text)
    return args


def format_results(results: dict[TP, tuple[int, int]]) -> list[str]:
    """(error, low watermark) per partition -> Kafka's result lines."""
    lines = []
    for (topic, partition), (error, low) in sorted(results.items()):
        if error == ErrorCode.NONE:
            lines.append(f"partition: {topic}-{partition}\tlow_watermark: {low}")
        else:
            e = ErrorCode.from_code(error)
            lines.append(f"partition: {topic}-{partition}\terror: {e.name}: {e.message}")
    return lines


async def execute(args: Namespace, out: IO[str]) -> int:
    out.write("Executing records delete operation\n")
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args),
                          client_id="adminclient-delete-records") as admin:
        answers = await delete_records_at_leaders(admin, args.offsets,
                                                  timeout_ms=int(args.timeout * 1000))
    out.write("Records delete operation completed:\n")
    results = {tp: (a.error, a.low_watermark) for tp, a in answers.items()}
    for line in format_results(results):
        out.write(line + "\n")
    return 1 if any(e for e, _ in results.values()) else 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    return run_tool(parse_args, execute, argv, stdin, stdout, stderr)
