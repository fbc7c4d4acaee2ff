"""``pybroker acls`` without a cluster: the argument checks of Kafka's AclCommand,
the --producer / --consumer expansions, the add/remove resource maps, the
(y/n) confirmation and the output format; and the client vocabulary's Java
toString forms."""

from __future__ import annotations

import io
from argparse import Namespace

import pytest

from client.acl_admin import (AccessControlEntry, AclOperation, PatternType, PermissionType,
                              ResourcePattern, ResourcePatternFilter, ResourceType,
                              parse_operation)
from tools import ToolError, acls

BOOT = ["--bootstrap-server", "127.0.0.1:1"]
Op, Perm, RT, PT = AclOperation, PermissionType, ResourceType, PatternType


def parse(*argv: str) -> Namespace:
    return acls.parse_args(BOOT + list(argv), io.StringIO(), io.StringIO())


def refused(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert acls.main(BOOT + list(argv), stdout=out, stderr=err) == 1
    assert out.getvalue() == ""
    return err.getvalue().strip()


def entry(principal: str, op: AclOperation, perm: PermissionType = Perm.ALLOW,
          host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def test_java_to_string_forms() -> None:
    assert str(ResourcePattern(RT.TOPIC, "t", PT.LITERAL)) == \
        "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    assert str(ResourcePatternFilter(RT.ANY, None, PT.ANY)) == \
        "ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY)"
    assert str(entry("User:alice", Op.READ)) == \
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert [parse_operation(s) for s in ("Read", "DESCRIBE_CONFIGS", "describeconfigs",
                                         "IdempotentWrite", "nope")] == [
        Op.READ, Op.DESCRIBE_CONFIGS, Op.DESCRIBE_CONFIGS, Op.IDEMPOTENT_WRITE, Op.UNKNOWN]


@pytest.mark.parametrize("argv, message", [
    ((), "Command must include exactly one action: --list, --add, --remove."),
    (("--add", "--list", "--topic", "t"), "exactly one action"),
    (("--list", "--allow-principal", "User:a"),
     'Option "[list]" can\'t be used with option "[allow-principal]"'),
    (("--add", "--producer", "--operation", "Read", "--topic", "t"),
     'Option "[producer]" can\'t be used with option "[operation]"'),
    (("--add", "--consumer", "--deny-principal", "User:a", "--topic", "t", "--group", "g"),
     'Option "[consumer]" can\'t be used with option "[deny-principal]"'),
    (("--add", "--principal", "User:a", "--topic", "t"),
     "The --principal option is only available if --list is set"),
    (("--add", "--producer", "--allow-principal", "User:a"),
     "With --producer you must specify a --topic"),
    (("--add", "--idempotent", "--allow-principal", "User:a", "--topic", "t"),
     "The --idempotent option is only available if --producer is set"),
    (("--add", "--consumer", "--allow-principal", "User:a", "--topic", "t"),
     "With --consumer you must specify a --topic and a --group"),
    (("--add", "--consumer", "--allow-principal", "User:a", "--topic", "t", "--group", "g",
      "--cluster"), "no --cluster or --transactional-id option should be specified."),
    (("--list", "--resource-pattern-type", "regex"), "Unknown resource-pattern-type: regex"),
    (("--add", "--allow-principal", "User:a", "--resource-pattern-type", "match", "--topic", "t"),
     "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (("--add", "--allow-principal", "User:a"), "You must provide at least one resource"),
    (("--add", "--topic", "t"), "You must specify one of: --allow-principal, --deny-principal"),
    (("--add", "--allow-principal", "alice", "--topic", "t"),
     "expected a string in format principalType:principalName but got alice"),
    (("--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"),
     "ResourceType GROUP only supports operations All, Read, Delete, Describe"),
    (("--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"),
     "ResourceType TOPIC only supports operations"),
])
def test_argument_errors_before_any_connection(argv: tuple[str, ...], message: str) -> None:
    assert message in refused(*argv)


def test_cli_entries_are_principal_by_operation_by_host() -> None:
    args = parse("--add", "--allow-principal", "User:a", "--allow-principal", "User:b",
                 "--allow-host", "10.0.0.1", "--deny-principal", "User:c", "--operation", "Read",
                 "--operation", "Describe", "--topic", "t", "--group", "g",
                 "--resource-pattern-type", "prefixed")
    added = acls.to_add(args)
    assert sorted(added) == [ResourcePattern(RT.TOPIC, "t", PT.PREFIXED),
                             ResourcePattern(RT.GROUP, "g", PT.PREFIXED)]
    want = {entry(p, op, Perm.ALLOW, "10.0.0.1") for p in ("User:a", "User:b")
            for op in (Op.READ, Op.DESCRIBE)} | {entry("User:c", op, Perm.DENY)
                                                for op in (Op.READ, Op.DESCRIBE)}
    assert all(es == want for es in added.values())
    default_all = acls.to_add(parse("--add", "--allow-principal", "User:a", "--cluster"))
    assert default_all == {ResourcePattern(RT.CLUSTER, "kafka-cluster", PT.LITERAL):
                           frozenset({entry("User:a", Op.ALL)})}


def test_producer_and_consumer_roles_as_kafka_expands_them() -> None:
    args = parse("--add", "--producer", "--consumer", "--idempotent", "--allow-principal",
                 "User:a", "--topic", "t", "--group", "g", "--transactional-id", "tx")
    got = {(p.resource_type, p.name): sorted(e.operation for e in es)
           for p, es in acls.to_add(args).items()}
    assert got == {
        (RT.TOPIC, "t"): sorted([Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.READ]),
        (RT.TRANSACTIONAL_ID, "tx"): sorted([Op.WRITE, Op.DESCRIBE]),
        (RT.CLUSTER, "kafka-cluster"): [Op.IDEMPOTENT_WRITE],
        (RT.GROUP, "g"): [Op.READ]}


def test_remove_and_list_filters() -> None:
    everything = acls.expand(parse("--remove", "--topic", "t", "--resource-pattern-type", "any"))
    assert everything == {ResourcePatternFilter(RT.TOPIC, "t", PT.ANY): frozenset()}
    # --cluster counts only with the literal pattern type, as in Kafka
    assert acls.resource_filters(parse("--list", "--cluster", "--resource-pattern-type", "match"),
                                 die_if_none=False) == []
    assert acls.resource_filters(parse("--list"), die_if_none=False) == []


def test_confirmation_reads_y_from_stdin() -> None:
    args = parse("--remove", "--topic", "t")
    out = io.StringIO()
    assert acls.confirm(args, "Sure? (y/n)", io.StringIO("y\n"), out)
    assert out.getvalue() == "Sure? (y/n)\n"
    assert not acls.confirm(args, "Sure? (y/n)", io.StringIO("n\n"), io.StringIO())
    assert not acls.confirm(args, "Sure? (y/n)", io.StringIO(""), io.StringIO())   # no stdin
    assert acls.confirm(parse("--remove", "--force", "--topic", "t"), "?", io.StringIO(""),
                        io.StringIO())


def test_list_output_as_kafka_prints_it() -> None:
    out = io.StringIO()
    acls.print_acls(out, {ResourcePattern(RT.TOPIC, "t", PT.LITERAL): {
        entry("User:b", Op.WRITE, Perm.DENY), entry("User:a", Op.READ)}})
    assert out.getvalue() == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:a, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:b, host=*, operation=WRITE, permissionType=DENY) \n\n")


def test_tool_errors_raise_tool_error() -> None:
    with pytest.raises(ToolError):
        acls.principal("nocolon")
