"""``pybroker configs``: Kafka's kafka-configs for users' SCRAM credentials, client quotas
(users, clients), and topics' and brokers' configs.

    pybroker configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U
        --add-config 'SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=x]'
    pybroker configs --bootstrap-server HOST:PORT --alter --entity-type users --entity-name U
        --delete-config SCRAM-SHA-512[,SCRAM-SHA-256]
    pybroker configs --bootstrap-server HOST:PORT --describe --entity-type users [--entity-name U]
    pybroker configs --bootstrap-server HOST:PORT --alter --entity-type topics --entity-name T
        [--add-config k=v[,k=v]] [--delete-config k[,k]]
    pybroker configs --bootstrap-server HOST:PORT --describe --entity-type topics
        [--entity-name T] [--all]

Brokers (issue 18): ``--entity-type brokers --entity-name ID`` is that broker's own
dynamic entry, ``--entity-default`` the cluster-wide default (``<default>``), e.g.

    pybroker configs --bootstrap-server H:P --alter --entity-type brokers --entity-default
        --add-config log.retention.ms=3600000,message.max.bytes=2097152
    pybroker configs --bootstrap-server H:P --describe --entity-type brokers --entity-default
    pybroker configs --bootstrap-server H:P --describe --entity-type brokers --entity-name 0 --all

and ``--entity-type broker-loggers --entity-name ID`` the broker's log levels
(``--add-config broker.handlers.fetch=DEBUG``, ``--delete-config LOGGER``: inherit again).

Client quotas (``--entity-type users`` / ``clients``, ``--entity-default``, keys
producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate)
are tools/client_quotas.py's; a users --alter may carry both kinds of keys.

``--user U``, ``--client C`` and ``--topic T`` stand for ``--entity-type
users|clients|topics --entity-name ..``;
``--command-config FILE`` gives the client's security settings (tools/__init__.py).

--add-config is read as Kafka 3.9's ConfigCommand reads it: items split at commas outside
``[...]``, each ``key=value`` (split at the first "=" outside brackets), brackets then
dropped from the value. A SCRAM value is ``[iterations=N,]password=P`` (iterations
default 4096, -1 means the default; the password is everything after ``password=``);
fewer iterations than the mechanism's minimum is refused here. The password is salted
on this side (client.scram_admin); only the salt and salted password are sent.

Output, as Kafka's: ``Completed updating config for user U.`` / ``... for topic T.``;
describing users prints ``SCRAM credential configs for user-principal 'U' are
SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096`` per user with credentials
(a user without any is left out, as Kafka's admin client drops RESOURCE_NOT_FOUND), and
topics ``Dynamic configs for topic T are:`` then one line per config (as
``pybroker topics --describe-configs``); describing users or clients prints their
quotas first (tools/client_quotas.py). Usage errors print their reason; failures
``Error while executing config command: <reason>``; both exit 1.
"""

from __future__ import annotations

import re
from argparse import Namespace
from dataclasses import dataclass
from typing import IO

from client import OP_DELETE, OP_SET, KafkaAdmin
from client.admin import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC
from client.scram_admin import (DEFAULT_ITERATIONS, ScramDeletion, ScramUpsertion,
                                alter_user_scram_credentials, describe_user_scram_credentials)
from protocol.errors import ErrorCode
from protocol.scram import MECHANISMS
from tools import (ToolError, ToolParser, UsageExit, add_command_config, client_quotas,
                   command_security, run, streams)
from tools.topics import format_config, select_topics

ERROR_PREFIX = "Error while executing config command: "
ENTITY_TYPES = ("users", "clients", "topics", "brokers", "broker-loggers")
QUOTA_KEYS = client_quotas.QUOTA_KEYS
# Kafka's ConfigCommand: "," and "=" split only outside [...] (a lookahead that finds no
# "]" before the next "[" or the end).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_ITEM_SPLIT = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE_SPLIT = re.compile(r"\s*=\s*" + _OUTSIDE_BRACKETS)
_VALID_KEY = re.compile(r"[a-zA-Z0-9._-]*")
_SCRAM_VALUE = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)


@dataclass(frozen=True)
class ScramSpec:
    """One --add-config SCRAM entry: ``SCRAM-SHA-256=[iterations=8192,password=x]``."""
    mechanism: str
    iterations: int
    password: str


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's parseConfigsToBeAdded: 'a=1,S=[iterations=8192,password=x]' ->
    {'a': '1', 'S': 'iterations=8192,password=x'}. ToolError on a malformed item."""
    out: dict[str, str] = {}
    items = _ITEM_SPLIT.split(text)
    while items and not items[-1]:  # Java's split drops trailing empty strings
        items.pop()
    for item in items:
        pair = _KEY_VALUE_SPLIT.split(item)
        if len(pair) != 2:
            raise ToolError('Invalid entity config: all configs to be added must be in the '
                            'format "key=val".')
        key = pair[0].strip()
        if not _VALID_KEY.fullmatch(key):
            raise ToolError(f"Invalid character found for config key: {key}")
        out[key] = pair[1].replace("[", "").replace("]", "").strip()
    return out


def parse_delete_config(values: list[str]) -> list[str]:
    """--delete-config, repeatable, each a comma-separated list of keys."""
    return [k.strip() for v in values for k in v.split(",") if k.strip()]


def parse_scram(mechanism: str, value: str) -> ScramSpec:
    """A SCRAM credential value ``[iterations=N,]password=P`` (ConfigCommand's
    iterationsAndPasswordBytes)."""
    m = _SCRAM_VALUE.fullmatch(value)
    if m is None:
        raise ToolError(f"Invalid credential property {mechanism}={value}")
    raw, password = m.group(1), m.group(2)
    try:
        iterations = DEFAULT_ITERATIONS if raw is None or raw == "-1" else int(raw)
    except ValueError:
        raise ToolError(f"Invalid credential property {mechanism}={value}") from None
    minimum = MECHANISMS[mechanism].min_iterations
    if iterations < minimum:
        raise ToolError(f"Iterations {iterations} is less than the minimum {minimum} "
                        f"required for {mechanism}")
    return ScramSpec(mechanism, iterations, password)


def scram_alterations(adds: dict[str, str], deletes: list[str]
                      ) -> tuple[list[ScramSpec], list[str]]:
    """Check a users --alter: SCRAM mechanisms (quota keys go to client_quotas)."""
    unknown = [k for k in [*adds, *deletes] if k not in MECHANISMS and k not in QUOTA_KEYS]
    if unknown:
        raise ToolError("Only quota and SCRAM credential configs can be altered for 'users' "
                        f"using --bootstrap-server. Unexpected config names: {', '.join(unknown)}")
    return ([parse_scram(k, v) for k, v in adds.items() if k in MECHANISMS],
            [k for k in deletes if k in MECHANISMS])


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker configs", out=out, err=err,
                   description="Describe or alter users' SCRAM credentials, client "
                   "quotas, and topics' and brokers' configs.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    act = p.add_mutually_exclusive_group(required=True)
    act.add_argument("--describe", action="store_true")
    act.add_argument("--alter", action="store_true")
    p.add_argument("--entity-type", choices=ENTITY_TYPES, action="append", default=[],
                   help="repeatable: users and clients together name a (user, client) entity")
    p.add_argument("--entity-name", action="append", dest="entity_name", default=[])
    p.add_argument("--entity-default", action="append_const", dest="entity_name", const=None,
                   help="the <default> entity of the --entity-type at the same position")
    p.add_argument("--user", help="--entity-type users --entity-name USER")
    p.add_argument("--client", help="--entity-type clients --entity-name CLIENT")
    p.add_argument("--topic", help="--entity-type topics --entity-name TOPIC")
    p.add_argument("--add-config", metavar="K=V[,K=[V,V]]")
    p.add_argument("--delete-config", action="append", default=[], metavar="K[,K]")
    p.add_argument("--all", action="store_true",
                   help="topics/brokers --describe: every config, not only the dynamic ones")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    """Parse and check the combination (ToolError on a bad one); sets ``entity_type``,
    ``names``, ``adds`` and ``deletes``."""
    args = build_parser(out, err).parse_args(argv)
    types, names = list(args.entity_type), list(args.entity_name)
    for shorthand, kind in ((args.user, "users"), (args.client, "clients"),
                            (args.topic, "topics")):
        if shorthand is not None:
            for other in args.entity_type:
                if other == kind or {other, kind} != {"users", "clients"}:
                    raise ToolError(f"--{kind[:-1]} cannot be used with --entity-type {other}")
            types.append(kind)
            names.append(shorthand)
    if not types:
        raise ToolError("--entity-type must be specified")
    args.entity_types = types
    args.entity_type = types[0]
    args.quota_names = names
    # quotas: users and/or clients, a default entity, or a quota key
    args.quotas = set(types) <= {"users", "clients"} and (
        "clients" in types or len(types) > 1 or None in names)
    if len(types) > 1 and not args.quotas:
        raise ToolError(f"Only users and clients can be combined; got {', '.join(types)}")
    args.names = [n for n in names if n is not None]
    args.entity_default = None in names
    if args.entity_default and set(types) & {"topics", "broker-loggers"}:
        raise ToolError(f"--entity-default is not valid with --entity-type {types[0]}")
    args.adds = parse_add_config(args.add_config) if args.add_config else {}
    args.deletes = parse_delete_config(args.delete_config)
    if args.alter:
        if len(names) != len(types) if args.quotas else len(names) != 1:
            raise ToolError("An entity name must be specified with --alter")
        if not args.adds and not args.deletes:
            raise ToolError("--alter needs --add-config or --delete-config")
    elif args.adds or args.deletes:
        raise ToolError("--add-config and --delete-config are only valid with --alter")
    args.quota_changes = {}
    if args.alter and args.entity_type == "users" and not args.quotas:
        quota_adds = {k: v for k, v in args.adds.items() if k in QUOTA_KEYS}
        quota_deletes = [k for k in args.deletes if k in QUOTA_KEYS]
        args.scram_adds, args.deletes = scram_alterations(args.adds, args.deletes)
        args.quota_changes = client_quotas.quota_changes(quota_adds, quota_deletes)
    elif args.alter and args.quotas:
        args.quota_entity = client_quotas.quota_entity(types, names)
        args.quota_changes = client_quotas.quota_changes(args.adds, args.deletes)
    return args


def format_user(user: str, credentials: list[tuple[str, int]]) -> str:
    shown = ", ".join(f"{m}=iterations={i}" for m, i in credentials)
    return f"SCRAM credential configs for user-principal '{user}' are {shown}"


def _check(code: int, message: str | None, what: str) -> None:
    if code != ErrorCode.NONE:
        err = ErrorCode.from_code(code)
        raise ToolError(f"{message or err.message} ({err.name}) for {what}")


async def execute(args: Namespace, out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        if args.quotas:
            if args.alter:
                await client_quotas.alter(admin, args.quota_entity, args.quota_changes)
                out.write(client_quotas.completed(args.entity_types, args.quota_names) + "\n")
            else:
                await client_quotas.describe(admin, args.entity_types, args.quota_names, out)
        elif args.entity_type == "users":
            if args.alter:
                if args.quota_changes:
                    await client_quotas.alter(admin, (("user", args.names[0]),),
                                              args.quota_changes)
                if args.scram_adds or args.deletes:
                    await _alter_user(admin, args.names[0], args.scram_adds, args.deletes)
                out.write(f"Completed updating config for user {args.names[0]}.\n")
            else:
                await client_quotas.describe(admin, ["users"], args.names[:1], out)
                await _describe_users(admin, args.names, out)
        elif args.entity_type == "brokers":
            if args.alter:
                name = "" if args.entity_default else args.names[0]
                await _alter_entity(admin, RESOURCE_BROKER, name, args.adds, args.deletes)
                out.write("Completed updating default config for brokers in the cluster.\n"
                          if args.entity_default
                          else f"Completed updating config for broker {name}.\n")
            elif args.entity_default:
                await _describe_broker_default(admin, out)
            else:
                await _describe_brokers(admin, args.names, args.all, out)
        elif args.entity_type == "broker-loggers":
            if args.alter:
                await _alter_entity(admin, RESOURCE_BROKER_LOGGER, args.names[0], args.adds,
                                    args.deletes)
                out.write(f"Completed updating config for broker-logger {args.names[0]}.\n")
            else:
                await _describe_loggers(admin, args.names, out)
        elif args.alter:
            await _alter_entity(admin, RESOURCE_TOPIC, args.names[0], args.adds, args.deletes)
            out.write(f"Completed updating config for topic {args.names[0]}.\n")
        else:
            await _describe_topics(admin, args.names, args.all, out)
    return 0


async def _alter_user(admin: KafkaAdmin, user: str, adds: list[ScramSpec],
                      deletes: list[str]) -> None:
    results = await alter_user_scram_credentials(
        admin, [ScramUpsertion(user, a.mechanism, a.password, a.iterations) for a in adds],
        [ScramDeletion(user, m) for m in deletes])
    for name, (code, message) in results.items():
        _check(code, message, f"user {name!r}")


async def _describe_users(admin: KafkaAdmin, users: list[str], out: IO[str]) -> None:
    for d in await describe_user_scram_credentials(admin, users):
        if d.error == ErrorCode.RESOURCE_NOT_FOUND:
            continue
        if d.error != ErrorCode.NONE:
            err = ErrorCode.from_code(d.error)
            out.write(f"Error retrieving SCRAM credential configs for user-principal "
                      f"'{d.user}': {err.name}: {d.message or err.message}\n")
            continue
        out.write(format_user(d.user, [(c.mechanism, c.iterations) for c in d.credentials])
                  + "\n")


async def _alter_entity(admin: KafkaAdmin, resource_type: int, name: str,
                        adds: dict[str, str], deletes: list[str]) -> None:
    """A topic's overrides, or a broker's dynamic configs (e.g. a TLS listener's
    keystore: certificate rotation), by IncrementalAlterConfigs."""
    ops: list[tuple[str, int, str | None]] = [(k, OP_SET, v) for k, v in adds.items()]
    ops += [(k, OP_DELETE, None) for k in deletes]
    code, message = await admin.incremental_alter_configs(name, ops,
                                                          resource_type=resource_type)
    kind = {RESOURCE_BROKER: "broker", RESOURCE_BROKER_LOGGER: "broker-logger"}.get(
        resource_type, "topic")
    _check(code, message, "the brokers' default" if resource_type == RESOURCE_BROKER
           and name == "" else f"{kind} {name!r}")


async def _describe_brokers(admin: KafkaAdmin, names: list[str], show_all: bool,
                            out: IO[str]) -> None:
    """ConfigCommand's broker listing: the dynamic configs (all with --all)."""
    for name in names or [str(i) for i in sorted((await admin.metadata([])).brokers)]:
        described = await admin.describe_configs([name], resource_type=RESOURCE_BROKER)
        code, message, configs = described.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, None, []))
        _check(code, message, f"broker {name!r}")
        out.write(f"{'All' if show_all else 'Dynamic'} configs for broker {name} are:\n")
        for c in configs:
            if show_all or c.config_source == 2:  # DYNAMIC_BROKER_CONFIG
                out.write(f"  {format_config(c)}\n")


async def _describe_broker_default(admin: KafkaAdmin, out: IO[str]) -> None:
    """The cluster default entry (BROKER ""), as ConfigCommand prints it."""
    described = await admin.describe_configs([""], resource_type=RESOURCE_BROKER)
    code, message, configs = described.get("", (ErrorCode.UNKNOWN_SERVER_ERROR, None, []))
    _check(code, message, "the brokers' default")
    out.write("Default configs for brokers in the cluster are:\n")
    for c in configs:
        out.write(f"  {format_config(c)}\n")


async def _describe_loggers(admin: KafkaAdmin, names: list[str], out: IO[str]) -> None:
    """Each broker's loggers and levels (BROKER_LOGGER)."""
    for name in names or [str(i) for i in sorted((await admin.metadata([])).brokers)]:
        described = await admin.describe_configs([name], resource_type=RESOURCE_BROKER_LOGGER,
                                                 include_synonyms=False)
        code, message, configs = described.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, None, []))
        _check(code, message, f"broker-logger {name!r}")
        out.write(f"Configs for broker-logger {name} are:\n")
        for c in configs:
            out.write(f"  {c.name}={c.value} sensitive=false synonyms={{}}\n")


async def _describe_topics(admin: KafkaAdmin, names: list[str], show_all: bool,
                           out: IO[str]) -> None:
    if not names:
        names = select_topics(await admin.metadata(None), None, exclude_internal=False)
    described = await admin.describe_configs(names)
    for name in names:
        code, message, configs = described.get(name, (ErrorCode.UNKNOWN_SERVER_ERROR, None, []))
        _check(code, message, f"topic {name!r}")
        out.write(f"{'All' if show_all else 'Dynamic'} configs for topic {name} are:\n")
        for c in configs:
            if show_all or c.config_source == 1:  # DYNAMIC_TOPIC_CONFIG
                out.write(f"  {format_config(c)}\n")


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    try:
        args = parse_args(argv, out, err)
    except UsageExit as e:
        return e.status
    except ToolError as e:
        err.write(f"{e}\n")
        return 1
    return run(lambda: execute(args, out), err, ERROR_PREFIX)
