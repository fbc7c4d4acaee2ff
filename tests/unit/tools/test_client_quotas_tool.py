"""``pybroker configs`` for client quotas (tools/client_quotas.py): entities paired from
--entity-type / --entity-name / --entity-default as kafka-configs.sh pairs them, the
filters a describe sends, and whole runs with the client verbs replaced by fakes."""

from __future__ import annotations

from typing import Any

import pytest

import tools.client_quotas as client_quotas
import tools.configs as configs
from client.quota_admin import FilterComponent
from tests.unit.tools.test_configs_tool import BOOT, FakeAdmin, run_tool
from tools import ToolError
from tools.configs import parse_args



def test_entities_pair_types_with_names_in_order() -> None:
    args = parse_args([*BOOT, "--alter", "--entity-type", "users", "--entity-default",
                       "--entity-type", "clients", "--entity-name", "app",
                       "--add-config", "producer_byte_rate=1048576,request_percentage=50"])
    assert args.quotas and args.quota_entity == (("user", None), ("client-id", "app"))
    assert args.quota_changes == {"producer_byte_rate": 1048576.0, "request_percentage": 50.0}
    args = parse_args([*BOOT, "--alter", "--client", "app", "--user", "alice",
                       "--delete-config", "consumer_byte_rate"])
    assert args.quota_entity == (("user", "alice"), ("client-id", "app"))
    assert args.quota_changes == {"consumer_byte_rate": None}


def test_user_alter_may_mix_quotas_and_scram() -> None:
    args = parse_args([*BOOT, "--alter", "--user", "alice", "--add-config",
                       "producer_byte_rate=1024,SCRAM-SHA-256=[password=x]"])
    assert not args.quotas and args.quota_changes == {"producer_byte_rate": 1024.0}
    assert [s.mechanism for s in args.scram_adds] == ["SCRAM-SHA-256"]


def test_describe_filters() -> None:
    f = client_quotas.quota_filter(["users", "clients"], [None])
    assert f == [FilterComponent("user", 1, None), FilterComponent("client-id", 2, None)]
    assert client_quotas.quota_filter(["clients"], ["app"]) == [FilterComponent("client-id", 0,
                                                                                "app")]
    with pytest.raises(ToolError):
        client_quotas.quota_filter(["topics"], [])


def test_runs_print_kafkas_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []

    async def alter(admin: Any, alterations: Any, **kw: Any) -> Any:
        sent.append(alterations)
        return {entity: (0, None) for entity in alterations}

    async def describe(admin: Any, components: Any, strict: bool = False) -> Any:
        sent.append((components, strict))
        return {(("client-id", "app"),): {"producer_byte_rate": 1048576.0},
                (("user", None), ("client-id", None)): {"request_percentage": 12.5}}
    monkeypatch.setattr(configs, "KafkaAdmin", FakeAdmin)
    monkeypatch.setattr(client_quotas, "alter_client_quotas", alter)
    monkeypatch.setattr(client_quotas, "describe_client_quotas", describe)
    assert run_tool(["--alter", "--entity-type", "clients", "--entity-name", "app",
                     "--add-config", "producer_byte_rate=1048576"]) == (
        0, "Completed updating config for client app.\n", "")
    assert run_tool(["--alter", "--entity-type", "clients", "--entity-default",
                     "--delete-config", "producer_byte_rate"]) == (
        0, "Completed updating default config for clients in the cluster.\n", "")
    status, out, _ = run_tool(["--describe", "--entity-type", "clients"])
    assert out == ("Quota configs for client-id 'app' are producer_byte_rate=1048576.0\n"
                   "Quota configs for the default user-principal, the default client-id are "
                   "request_percentage=12.5\n")
    assert sent[:2] == [{(("client-id", "app"),): {"producer_byte_rate": 1048576.0}},
                        {(("client-id", None),): {"producer_byte_rate": None}}]
    assert sent[2] == ([FilterComponent("client-id", 2, None)], True)


def test_a_refused_alteration_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    async def alter(admin: Any, alterations: Any, **kw: Any) -> Any:
        return {entity: (42, "Invalid configuration key x") for entity in alterations}
    monkeypatch.setattr(configs, "KafkaAdmin", FakeAdmin)
    monkeypatch.setattr(client_quotas, "alter_client_quotas", alter)
    status, out, err = run_tool(["--alter", "--client", "app", "--add-config",
                                 "consumer_byte_rate=10"])
    assert status == 1 and "Invalid configuration key x (INVALID_REQUEST)" in err
