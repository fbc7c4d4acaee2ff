"""``pybroker configs``: Kafka's --add-config syntax, the SCRAM value form, option checks,
and the output of whole runs with the client verbs replaced by fakes."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import pytest

import tools.configs as configs
from client.scram_admin import (CredentialInfo, ScramDeletion, ScramUpsertion, UserCredentials,
                                alter_request)
from protocol.errors import ErrorCode
from protocol.scram import salted_password
from tools import ToolError
from tools.configs import (ScramSpec, parse_add_config, parse_args, parse_delete_config,
                           parse_scram)

SHA256, SHA512 = "SCRAM-SHA-256", "SCRAM-SHA-512"


# ---- --add-config, as ConfigCommand.parseConfigsToBeAdded ------------------------------------

@pytest.mark.parametrize("text, parsed", [
    ("SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,password=x]",
     {SHA512: "password=alice-secret", SHA256: "iterations=8192,password=x"}),
    ("a=1,b=[x,y],c=2", {"a": "1", "b": "x,y", "c": "2"}),
    (" a = 1 , b=2", {"a": "1", "b": "2"}),
    ("a=", {"a": ""}),                                  # an empty value is a value
    ("a=1,", {"a": "1"}),                               # Java's split drops a trailing ""
    ("S=[password=p=q,r]", {"S": "password=p=q,r"}),    # "=" and "," inside brackets stay
])
def test_add_config_is_split_outside_brackets(text: str, parsed: dict[str, str]) -> None:
    assert parse_add_config(text) == parsed


@pytest.mark.parametrize("text", ["a", "a=1,b", "SCRAM-SHA-512=password=x", ",a=1"])
def test_add_config_needs_key_equals_value(text: str) -> None:
    with pytest.raises(ToolError, match="key=val"):
        parse_add_config(text)


def test_add_config_key_characters() -> None:
    with pytest.raises(ToolError, match="Invalid character found for config key: a b"):
        parse_add_config("a b=1")


def test_delete_config_lists() -> None:
    assert parse_delete_config(["SCRAM-SHA-512", " a , b", "c,"]) == [SHA512, "a", "b", "c"]


@pytest.mark.parametrize("value, spec", [
    ("password=alice-secret", ScramSpec(SHA256, 4096, "alice-secret")),
    ("iterations=8192,password=x", ScramSpec(SHA256, 8192, "x")),
    ("iterations=-1,password=x", ScramSpec(SHA256, 4096, "x")),
    ("password=a,b=c", ScramSpec(SHA256, 4096, "a,b=c")),   # the rest is the password
    ("password=", ScramSpec(SHA256, 4096, "")),
])
def test_scram_value(value: str, spec: ScramSpec) -> None:
    assert parse_scram(SHA256, value) == spec


@pytest.mark.parametrize("value, message", [
    ("iterations=4095,password=x",
     "Iterations 4095 is less than the minimum 4096 required for SCRAM-SHA-256"),
    ("password", "Invalid credential property SCRAM-SHA-256=password"),
    ("x=1,password=y", "Invalid credential property"),
    ("iterations=,password=y", "Invalid credential property"),
])
def test_scram_value_refused(value: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_scram(SHA256, value)


# ---- option combinations ---------------------------------------------------------------

BOOT = ["--bootstrap-server", "127.0.0.1:9092"]


def test_alter_users_args() -> None:
    args = parse_args([*BOOT, "--alter", "--entity-type", "users", "--entity-name", "alice",
                       "--add-config", "SCRAM-SHA-512=[password=s]",
                       "--delete-config", "SCRAM-SHA-256"])
    assert args.entity_type == "users" and args.names == ["alice"]
    assert args.scram_adds == [ScramSpec(SHA512, 4096, "s")] and args.deletes == [SHA256]
    shorthand = parse_args([*BOOT, "--alter", "--user", "alice", "--delete-config", SHA512])
    assert shorthand.entity_type == "users" and shorthand.names == ["alice"]


@pytest.mark.parametrize("argv, message", [
    (["--describe"], "--entity-type must be specified"),
    (["--alter", "--entity-type", "users", "--add-config", "SCRAM-SHA-256=[password=x]"],
     "An entity name must be specified"),
    (["--alter", "--entity-type", "users", "--entity-name", "a"], "needs --add-config"),
    (["--describe", "--entity-type", "users", "--add-config", "a=1"], "only valid with --alter"),
    (["--alter", "--user", "a", "--add-config", "SCRAM-SHA-1=[password=x]"],
     "Unexpected config names: SCRAM-SHA-1"),
    (["--alter", "--user", "a", "--add-config", "producer_byte_rate=fast"],
     "Invalid value for quota config producer_byte_rate"),
    (["--alter", "--entity-type", "clients", "--add-config", "producer_byte_rate=1"],
     "An entity name must be specified"),
    (["--alter", "--client", "c", "--add-config", "SCRAM-SHA-256=[password=x]"],
     "Only quota configs can be added for 'clients'"),
    (["--describe", "--entity-type", "topics", "--entity-type", "users"],
     "Only users and clients can be combined"),
    (["--alter", "--user", "a", "--delete-config", "other"], "Unexpected config names: other"),
    (["--alter", "--entity-type", "topics", "--user", "a", "--delete-config", SHA256],
     "--user cannot be used with --entity-type topics"),
])
def test_bad_combinations(argv: list[str], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_args([*BOOT, *argv])


# ---- the client's request: salted on this side -----------------------------------------------

def test_alter_request_carries_salt_and_salted_password_only() -> None:
    body, refused = alter_request(
        [ScramUpsertion("alice", SHA512, "alice-secret"),
         ScramUpsertion("alice", SHA256, "x", 8192, salt=b"fixed"),
         ScramUpsertion("nopw", SHA256, ""), ScramUpsertion("", SHA256, "x"),
         ScramUpsertion("big", SHA256, "x", 10**9)],
        [ScramDeletion("bob", SHA256), ScramDeletion("odd", "SCRAM-SHA-1")])
    assert refused == {"nopw": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Password must not be empty"),
                       "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
                       "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")}
    ups = {(u.name, u.mechanism): u for u in body.upsertions}
    assert set(ups) == {("alice", 2), ("alice", 1), ("big", 1)}
    first, second = ups[("alice", 2)], ups[("alice", 1)]
    assert first.iterations == 4096 and 1 <= len(first.salt) <= 26 and first.salt.isalnum()
    assert first.salted_password == salted_password(SHA512, "alice-secret", first.salt, 4096)
    assert second.salt == b"fixed" and second.iterations == 8192
    assert second.salted_password == salted_password(SHA256, "x", b"fixed", 8192)
    assert ups[("big", 1)].salted_password == b""   # the broker refuses it by iterations
    again, _ = alter_request([ScramUpsertion("alice", SHA512, "alice-secret")], [])
    assert again.upsertions[0].salt != first.salt     # a fresh random salt each time
    assert [(d.name, d.mechanism) for d in body.deletions] == [("bob", 1)]


# ---- whole runs, client verbs faked ---------------------------------------------------------

class FakeAdmin:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def __aenter__(self) -> FakeAdmin:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass


def run_tool(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = configs.main([*BOOT, *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_describe_users_prints_kafkas_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []

    async def describe(admin: Any, users: Sequence[str] | None = None) -> list[UserCredentials]:
        asked.append(users)
        return [UserCredentials("alice", credentials=(CredentialInfo(SHA256, 8192),
                                                      CredentialInfo(SHA512, 4096))),
                UserCredentials("ghost", ErrorCode.RESOURCE_NOT_FOUND, "no such user"),
                UserCredentials("dup", ErrorCode.DUPLICATE_RESOURCE, "twice")]
    monkeypatch.setattr(configs, "KafkaAdmin", FakeAdmin)
    monkeypatch.setattr(configs, "describe_user_scram_credentials", describe)

    async def no_quotas(*args: Any, **kwargs: Any) -> dict[Any, Any]:
        return {}
    monkeypatch.setattr(configs.client_quotas, "describe_client_quotas", no_quotas)
    status, out, err = run_tool(["--describe", "--entity-type", "users"])
    assert (status, err) == (0, "")
    assert out == ("SCRAM credential configs for user-principal 'alice' are "
                   "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
                   "Error retrieving SCRAM credential configs for user-principal 'dup': "
                   "DUPLICATE_RESOURCE: twice\n")
    run_tool(["--describe", "--entity-type", "users", "--entity-name", "alice"])
    assert asked == [[], ["alice"]]


def test_alter_users_sends_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []

    async def alter(admin: Any, ups: Sequence[ScramUpsertion] = (),
                    dels: Sequence[ScramDeletion] = ()) -> dict[str, tuple[int, str | None]]:
        sent.append((list(ups), list(dels)))
        return {"alice": (0, None)} if ups or dels else {}
    monkeypatch.setattr(configs, "KafkaAdmin", FakeAdmin)
    monkeypatch.setattr(configs, "alter_user_scram_credentials", alter)
    status, out, err = run_tool([
        "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
        "SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,password=x]"])
    assert (status, out, err) == (0, "Completed updating config for user alice.\n", "")
    assert sent == [([ScramUpsertion("alice", SHA512, "alice-secret", 4096),
                      ScramUpsertion("alice", SHA256, "x", 8192)], [])]

    async def refuse(admin: Any, ups: Any = (), dels: Any = ()) -> dict[str, Any]:
        return {"alice": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential "
                                                        "that does not exist")}
    monkeypatch.setattr(configs, "alter_user_scram_credentials", refuse)
    status, out, err = run_tool(["--alter", "--user", "alice", "--delete-config", SHA512])
    assert status == 1 and out == ""
    assert err == ("Error while executing config command: Attempt to delete a user credential "
                   "that does not exist (RESOURCE_NOT_FOUND) for user 'alice'\n")


def test_usage_errors_print_the_reason() -> None:
    status, out, err = run_tool(["--alter", "--user", "a", "--add-config",
                                 "SCRAM-SHA-256=[iterations=10,password=x]"])
    assert status == 1 and out == ""
    assert err == "Iterations 10 is less than the minimum 4096 required for SCRAM-SHA-256\n"
