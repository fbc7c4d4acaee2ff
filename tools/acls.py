"""``pybroker acls``: Kafka's kafka-acls, over the Kafka protocol.

    pybroker acls --bootstrap-server HOST:PORT --add --allow-principal User:alice
        [--allow-host H] --operation Read [--operation Describe] --topic t
    pybroker acls --bootstrap-server HOST:PORT --add --producer --allow-principal P --topic t
        [--transactional-id id] [--idempotent]
    pybroker acls --bootstrap-server HOST:PORT --add --consumer --allow-principal P
        --topic t --group g
    pybroker acls --bootstrap-server HOST:PORT --list [--topic t | --group g | --cluster ...]
        [--principal P]
    pybroker acls --bootstrap-server HOST:PORT --remove [--force] [--deny-principal P ...]
        --topic t

As Kafka's AclCommand: one action of --add / --remove / --list; resources from
--topic, --group, --transactional-id (repeatable) and --cluster (only with the
literal pattern type); --resource-pattern-type literal (default) | prefixed |
match | any (match and any only to list or remove). Entries are every
combination of principal x operation x host, ALLOW from --allow-principal and
--allow-host, DENY from --deny-principal and --deny-host (a host defaults to *
once a principal is given; --operation defaults to All). Convenience roles
(``expand``): --producer gives Write, Describe, Create on each topic and Write,
Describe on each transactional id (IdempotentWrite on the cluster with
--idempotent); --consumer gives Read, Describe on each topic and Read on each
group. --remove asks "(y/n)" per resource filter and reads the answer from
stdin (no answer = no), unless --force; with no principal it removes every ACL
of the filter. --command-config FILE: the client's security settings (TLS,
SASL), as Kafka's. The ACL verbs are ``client.acl_admin``.

Output as Kafka's (the Java toString of the resource and entries): per resource
"Current ACLs for resource `<pattern>`: " and a newline, then " " and the entries
one a line, each after a tab, then " ", a newline and an empty line::

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
     <TAB>(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
    <TAB>(principal=User:bob, host=*, operation=WRITE, permissionType=DENY)

(--add prints "Adding ACLs for resource ..." the same way before each CreateAcls).
Argument errors are found before any connection is made.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Iterable
from typing import IO

from client import KafkaAdmin
from client.acl_admin import (ANY_FILTER, CLUSTER_NAME, SUPPORTED_OPERATIONS, WILDCARD,
                              AccessControlEntry, AclAdmin, AclBinding, AclBindingFilter,
                              AclOperation, EntryFilter, PatternType, PermissionType,
                              ResourcePattern, ResourcePatternFilter, ResourceType,
                              parse_operation, pascal)
from tools import (ToolError, ToolParser, add_command_config, command_security,
                   parse_or_status, run, streams)

CLUSTER_FILTER = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
PATTERN_TYPES = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED,
                 "match": PatternType.MATCH, "any": PatternType.ANY}
PRODUCER_TOPIC_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE)
PRODUCER_TXN_OPS = (AclOperation.WRITE, AclOperation.DESCRIBE)
CONSUMER_TOPIC_OPS = (AclOperation.READ, AclOperation.DESCRIBE)
CONSUMER_GROUP_OPS = (AclOperation.READ,)

Entries = frozenset[AccessControlEntry]


def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker acls", out=out, err=err,
                   description="This tool helps to manage acls on kafka.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    p.add_argument("--add", action="store_true", help="add ACLs")
    p.add_argument("--remove", action="store_true", help="remove ACLs")
    p.add_argument("--list", action="store_true", help="list ACLs")
    p.add_argument("--topic", action="append", default=[], help="'*' means every topic")
    p.add_argument("--group", action="append", default=[], help="'*' means every group")
    p.add_argument("--transactional-id", action="append", default=[])
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--resource-pattern-type", default="literal", metavar="TYPE",
                   help="literal (default), prefixed, match or any")
    p.add_argument("--operation", action="append", default=[],
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                        "DescribeConfigs, AlterConfigs, IdempotentWrite, All (default All)")
    p.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--allow-host", action="append", default=[])
    p.add_argument("--deny-host", action="append", default=[])
    p.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME",
                   help="with --list: only this principal's ACLs")
    p.add_argument("--producer", action="store_true", help="the producer role's ACLs")
    p.add_argument("--consumer", action="store_true", help="the consumer role's ACLs")
    p.add_argument("--idempotent", action="store_true",
                   help="with --producer: IdempotentWrite on the cluster too")
    p.add_argument("--force", action="store_true", help="assume yes to every question")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    return p


def check_args(args: Namespace) -> None:
    """AclCommandOptions.checkArgs."""
    if [args.add, args.remove, args.list].count(True) != 1:
        raise ToolError("Command must include exactly one action: --list, --add, --remove. ")
    for used, invalid in (("list", ("producer", "consumer", "allow_host", "allow_principal",
                                    "deny_host", "deny_principal")),
                          ("producer", ("operation", "deny_principal", "deny_host")),
                          ("consumer", ("operation", "deny_principal", "deny_host"))):
        for name in invalid:
            if getattr(args, used) and getattr(args, name):
                raise ToolError(f'Option "[{used}]" can\'t be used with option '
                                f'"[{name.replace("_", "-")}]"')
    if args.principal and not args.list:
        raise ToolError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise ToolError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise ToolError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group or (
            not args.producer and (args.cluster or args.transactional_id))):
        raise ToolError("With --consumer you must specify a --topic and a --group and no "
                        "--cluster or --transactional-id option should be specified.")
    pattern_type(args)


def pattern_type(args: Namespace) -> PatternType:
    found = PATTERN_TYPES.get(args.resource_pattern_type.strip().lower())
    if found is None:
        raise ToolError(f"Unknown resource-pattern-type: {args.resource_pattern_type}")
    return found


def principal(text: str) -> str:
    """SecurityUtils.parseKafkaPrincipal's check: TYPE:NAME."""
    text = text.strip()
    kind, sep, _name = text.partition(":")
    if not sep or not kind:
        raise ToolError(f"expected a string in format principalType:principalName but got {text}")
    return text


def resource_filters(args: Namespace, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """getResourceFilter: the resources named, in Kafka's order (topics, the cluster
    with a literal pattern type only, groups, transactional ids)."""
    pt = pattern_type(args)
    out = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pt) for t in args.topic]
    if pt == PatternType.LITERAL and (args.cluster or args.idempotent):
        out.append(CLUSTER_FILTER)
    out += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pt) for g in args.group]
    out += [ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pt)
            for t in args.transactional_id]
    out = list(dict.fromkeys(out))
    if not out and die_if_none:
        raise ToolError("You must provide at least one resource: --topic <topic> or --cluster "
                        "or --group <group> or --delegation-token <Delegation Token ID>")
    return out


def entries(args: Namespace, operations: Iterable[AclOperation]) -> Entries:
    """getAcl: principal x operation x host, ALLOW and DENY."""
    ops = list(operations)
    out: set[AccessControlEntry] = set()
    for principals, hosts, perm in ((args.allow_principal, args.allow_host, PermissionType.ALLOW),
                                    (args.deny_principal, args.deny_host, PermissionType.DENY)):
        names = [principal(p) for p in principals]
        host_list = [h.strip() for h in hosts] or ([WILDCARD] if names else [])
        out.update(AccessControlEntry(p, h, op, perm) for p in names for op in ops
                   for h in host_list)
    return frozenset(out)


def expand(args: Namespace) -> dict[ResourcePatternFilter, Entries]:
    """getResourceFilterToAcls: resource filter -> entries, from the CLI options or
    the --producer / --consumer roles, each operation valid for its resource type."""
    out: dict[ResourcePatternFilter, Entries] = {}
    if not args.producer and not args.consumer:
        ops = [parse_operation(o) for o in (args.operation or ["All"])]
        acl = entries(args, ops)
        out.update({f: acl for f in resource_filters(args)})
    if args.producer:
        filters = resource_filters(args)
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                out[f] = entries(args, PRODUCER_TOPIC_OPS)
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                out[f] = entries(args, PRODUCER_TXN_OPS)
        if args.idempotent:
            out[CLUSTER_FILTER] = entries(args, [AclOperation.IDEMPOTENT_WRITE])
    if args.consumer:
        for f in resource_filters(args):
            role_ops = {ResourceType.TOPIC: CONSUMER_TOPIC_OPS,
                        ResourceType.GROUP: CONSUMER_GROUP_OPS}.get(f.resource_type)
            if role_ops is not None:
                out[f] = entries(args, role_ops) | out.get(f, frozenset())
    for f, acl in out.items():
        valid = frozenset(SUPPORTED_OPERATIONS[f.resource_type]) | {AclOperation.ALL}
        if any(e.operation not in valid for e in acl):
            names = ", ".join(pascal(op) for op in sorted(valid))
            raise ToolError(f"ResourceType {f.resource_type.name} only supports operations "
                            f"{names}")
    return out


def to_add(args: Namespace) -> dict[ResourcePattern, Entries]:
    """getResourceToAcls: concrete patterns, each with at least one entry."""
    pt = pattern_type(args)
    if pt not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ToolError(f"A '--resource-pattern-type' value of '{pt.name}' is not valid when "
                        "adding acls.")
    out = {ResourcePattern(f.resource_type, f.name or "", f.pattern_type): acl
           for f, acl in expand(args).items()}
    if any(not acl for acl in out.values()):
        raise ToolError("You must specify one of: --allow-principal, --deny-principal when "
                        "trying to add ACLs.")
    return out


def block(entries_: Iterable[AccessControlEntry]) -> str:
    return "\n".join(f"\t{e}" for e in sorted(entries_))


def print_acls(out: IO[str], by_resource: dict[ResourcePattern, set[AccessControlEntry]]
               ) -> None:
    for pattern in sorted(by_resource):
        out.write(f"Current ACLs for resource `{pattern}`: \n {block(by_resource[pattern])} \n\n")


def confirm(args: Namespace, question: str, stdin: IO[str], out: IO[str]) -> bool:
    """confirmAction: --force, or a 'y' read from stdin (EOF = no)."""
    if args.force:
        return True
    out.write(question + "\n")
    out.flush()
    return stdin.readline().strip().lower() == "y"


async def list_acls(acls: AclAdmin, args: Namespace, out: IO[str]) -> None:
    filters = resource_filters(args, die_if_none=False)
    bindings: list[AclBinding] = []
    chosen: list[ResourcePatternFilter | None] = list(filters) if filters else [None]
    for f in chosen:
        bindings += await acls.describe(ANY_FILTER if f is None else AclBindingFilter(f))
    by_resource: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for b in bindings:
        by_resource.setdefault(b.pattern, set()).add(b.entry)
    if not args.principal:
        print_acls(out, by_resource)
        return
    for p in (principal(x) for x in args.principal):
        out.write(f"ACLs for principal `{p}`\n")
        mine = {r: {e for e in es if e.principal == p} for r, es in by_resource.items()}
        print_acls(out, {r: es for r, es in mine.items() if es})


async def execute(args: Namespace, stdin: IO[str], out: IO[str]) -> int:
    async with KafkaAdmin(args.bootstrap_server, timeout=args.timeout,
                          security=command_security(args)) as admin:
        acls = AclAdmin(admin)
        if args.add:
            for pattern, acl in sorted(to_add(args).items()):
                out.write(f"Adding ACLs for resource `{pattern}`: \n {block(acl)} \n\n")
                await acls.create([AclBinding(pattern, e) for e in sorted(acl)])
        elif args.remove:
            for f, acl in expand(args).items():
                if not acl:
                    question = (f"Are you sure you want to delete all ACLs for resource filter "
                                f"`{f}`? (y/n)")
                else:
                    question = (f"Are you sure you want to remove ACLs: \n {block(acl)} \n "
                                f"from resource filter `{f}`? (y/n)")
                if confirm(args, question, stdin, out):
                    await acls.delete([AclBindingFilter(f)] if not acl else
                                      [AclBindingFilter(f, EntryFilter.of(e)) for e in sorted(acl)])
        else:
            await list_acls(acls, args, out)
    return 0


def parse_args(argv: list[str], out: IO[str], err: IO[str]) -> Namespace:
    """The arguments, checked as far as they can be without the cluster (ToolError)."""
    args = build_parser(out, err).parse_args(argv)
    check_args(args)
    if args.add:
        to_add(args)
    elif args.remove:
        expand(args)
    else:
        resource_filters(args, die_if_none=False)
        for p in args.principal:
            principal(p)
    return args


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    inp, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, argv, out, err)
    if isinstance(args, int):
        return args
    return run(lambda: execute(args, inp, out), err, prefix="Error while executing ACL command: ")
