"""Command-line tools in the spirit of Kafka's scripts, talking only the Kafka protocol.

Each module has ``main(argv, *, stdin=None, stdout=None, stderr=None) -> int``
(the exit status), dispatched by ``pybroker <tool>`` (the front door, broker/cli.py) and easy to
call in-process from tests: streams default to the process's own.

This package holds what the tools share: an argparse parser that reports to
the given stderr and never exits the process, ``key=value`` parsing, Kafka's
``--command-config FILE`` (``add_command_config`` adds it, ``command_security``
turns it into the ``client.security.ClientSecurity`` every KafkaAdmin gets: TLS
and SASL from Kafka's or librdkafka's client keys), and ``run`` that drives a
coroutine and turns client errors into exit status 1.

Map (what lives where):

    topics.py                  pybroker topics: create, delete, list, describe, alter
                               partitions and configs (KafkaAdmin)
    console_producer.py        pybroker console-producer: stdin lines -> records
                               (client.producer.send_batches)
    console_consumer.py        pybroker console-consumer: records -> stdout, Kafka's
                               formatter (client.consumer.Consumer)
    consumer_groups.py         pybroker consumer-groups: list, describe, reset and
                               delete offsets, delete groups (client.group_admin)
    consumer_groups_format.py  its output, column for column as Kafka 3.9 prints it
    reassign_partitions.py     pybroker reassign-partitions: generate, execute, verify,
                               cancel, list (KafkaAdmin, client.assignment)
    leader_election.py         pybroker leader-election: preferred / unclean (KafkaAdmin)
    transactions.py            pybroker transactions: list, describe, describe-producers,
                               find-hanging, abort (client.transactions_admin)
    acls.py                    pybroker acls: add, remove, list ACLs, --producer /
                               --consumer roles, as kafka-acls (client.acl_admin)
    configs.py                 pybroker configs: SCRAM credentials, topic configs (scram_admin)
    log_dirs.py                pybroker log-dirs: kafka-log-dirs (client.operator_admin)
    get_offsets.py             pybroker get-offsets: kafka-get-offsets / GetOffsetShell
    delete_records.py          pybroker delete-records: kafka-delete-records (operator_admin)
    producer_perf.py           pybroker producer-perf-test: ProducerPerformance's run and lines
    consumer_perf.py           pybroker consumer-perf-test: ConsumerPerformance (GroupConsumer)
    verifiable_producer.py     pybroker verifiable-producer: Kafka's JSON event protocol
    verifiable_consumer.py     pybroker verifiable-consumer: the same, a group member
    record_pipeline.py         records -> batches -> send_batches rounds in flight (the two
                               producers above)
    perf_common.py             their client properties, producer settings, throttler
    dump_log.py                pybroker dump-log: segment, index, txn-index and snapshot
                               files dumped as kafka-dump-log.sh (reads the files)
    dump_log_format.py         its lines, field for field as Kafka 3.9's DumpLogSegments
    dump_log_decoders.py       its key/value decoders (__consumer_offsets,
                               __transaction_state, Kafka's String/Integer/LongDecoder)
    console/                   pybroker console: the web console, server-rendered pages on
                               our asyncio HTTP server, with the "why" (its own map)
    client_quotas.py           pybroker configs for client quotas (kafka-configs.sh's side)

What a tool may import: ``client/`` and ``protocol/`` only (the layering test
checks), never broker, controller, storage or spark_jobs (one exception:
dump_log and dump_log_format read log files through storage's readers, as Kafka's
kafka-dump-log.sh reads them); nothing imports a tool. A tool never builds a
Kafka request: a verb it needs goes into ``client/`` (``verbs.py``, ``groups.py``
or ``KafkaAdmin``) and the tool calls it.
A new tool is a module here with ``main`` and a line in broker/cli.py's TOOLS
table (``pybroker <name>``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any, NoReturn

from client import KafkaConnectionError
from client.errors import ConsumerError
from client.security import ClientSecurity, load_client_properties
from protocol.errors import KafkaError


class ToolError(Exception):
    """A user-facing failure: printed as is, exit status 1."""


class UsageExit(Exception):
    """argparse wanted to exit (``--help`` or a usage error)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class ToolParser(argparse.ArgumentParser):
    """ArgumentParser printing to a chosen stream and raising instead of exiting."""

    def __init__(self, *args: Any, out: IO[str] | None = None, err: IO[str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._out = out
        self._err = err

    def _print_message(self, message: str, file: Any = None) -> None:   # argparse's hook
        if not message:
            return
        target = self._err if file is sys.stderr or file is None else self._out
        (target or file or sys.stderr).write(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        raise UsageExit(status)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_key_values(items: list[str] | None, what: str = "property") -> dict[str, str]:
    """['k=v', 'a=b'] -> {'k': 'v', 'a': 'b'}; the value may contain '='."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ToolError(f"invalid {what} {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def split_config_list(text: str) -> list[str]:
    """'a=1,b=[x,y],c=2' -> ['a=1', 'b=x,y', 'c=2'] (Kafka's bracket syntax for lists)."""
    items: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == "[":
            depth += 1
            continue
        if ch == "]":
            depth = max(0, depth - 1)
            continue
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        current += ch
    items.append(current)
    return [i for i in (s.strip() for s in items) if i]


def add_command_config(p: argparse.ArgumentParser, *aliases: str) -> None:
    """Kafka's ``--command-config FILE`` (plus the names the tool's Kafka script
    had for it, e.g. ``--consumer.config``): a client properties file whose
    ``security.protocol``, ``ssl.*`` and ``sasl.*`` keys ``command_security`` reads."""
    p.add_argument("--command-config", *aliases, dest="command_config", metavar="FILE",
                   help="client properties file: security.protocol, ssl.*, sasl.* "
                        "(Kafka's or librdkafka's keys)")


def command_security(args: argparse.Namespace,
                     overrides: Mapping[str, str] | None = None) -> ClientSecurity:
    """The ClientSecurity of ``args.command_config`` (PLAINTEXT without one), with
    ``overrides`` (properties given on the command line) taking precedence, as in
    Kafka's tools. ToolError naming the file or key when it cannot be used."""
    path = getattr(args, "command_config", None)
    try:
        props = load_client_properties(path) if path else {}
        props.update(overrides or {})
        return ClientSecurity.from_config(props)
    except ValueError as e:
        raise ToolError(f"--command-config {path}: {e}" if path else str(e)) from None


def parse_or_status(parse: Callable[[list[str], IO[str], IO[str]], Any], argv: list[str],
                    out: IO[str], err: IO[str]) -> Any:
    """The parsed arguments, or the exit status when parsing ended the tool
    (--help / a usage error: argparse's status; a ToolError: one line, 1)."""
    try:
        return parse(argv, out, err)
    except UsageExit as e:
        return e.status
    except ToolError as e:
        err.write(f"{e}\n")
        return 1


def run(coro_fn: Callable[[], Awaitable[int]], stderr: IO[str], prefix: str = "") -> int:
    """Run a tool's coroutine; client and tool errors print one line and give 1."""
    try:
        return asyncio.run(_call(coro_fn))
    except KeyboardInterrupt:
        return 130
    except (ToolError, KafkaConnectionError, ConsumerError, KafkaError, ValueError) as e:
        stderr.write(f"{prefix}{e}\n")
        return 1


async def _call(coro_fn: Callable[[], Awaitable[int]]) -> int:
    return await coro_fn()


def streams(stdin: IO[str] | None, stdout: IO[str] | None,
            stderr: IO[str] | None) -> tuple[IO[str], IO[str], IO[str]]:
    return stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr


def run_tool(parse: Callable[[list[str], IO[str], IO[str]], Any],
             execute: Callable[..., Awaitable[int]], argv: list[str],
             stdin: IO[str] | None, stdout: IO[str] | None, stderr: IO[str] | None, *,
             pass_err: bool = False, prefix: str = "") -> int:
    """A tool's ``main`` when it is "parse, then run ``execute(args, stdout)``"
    (``execute(args, stdout, stderr)`` with ``pass_err``): the exit status of
    whichever ends it (parse_or_status, then run; errors printed after ``prefix``)."""
    _, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse, argv, out, err)
    if isinstance(args, int):
        return args
    if pass_err:
        return run(lambda: execute(args, out, err), err, prefix)
    return run(lambda: execute(args, out), err, prefix)
