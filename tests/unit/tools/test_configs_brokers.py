"""``pybroker configs`` for brokers (per id and --entity-default) and broker-loggers:
the requests it sends and Kafka's lines it prints (a fake admin client)."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest

from client.admin import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER
from tools import configs

BOOT = ["--bootstrap-server", "127.0.0.1:1"]


class FakeAdmin:
    sent: list[Any] = []
    described: list[Any] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def __aenter__(self) -> FakeAdmin:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass

    async def incremental_alter_configs(self, name: str, ops: list[Any], *,
                                        resource_type: int = 2) -> tuple[int, str | None]:
        FakeAdmin.sent.append((resource_type, name, ops))
        if any(v == "bad" for _k, _op, v in ops):
            return 40, "Invalid value bad for configuration log.retention.ms: not a number"
        return 0, None

    async def describe_configs(self, names: list[str], *, resource_type: int = 2,
                               include_synonyms: bool = True, keys: Any = None) -> Any:
        FakeAdmin.described.append((resource_type, names))
        syn = SimpleNamespace(name="log.retention.ms", value="1000", source=3)
        row = SimpleNamespace(name="log.retention.ms", value="1000", is_sensitive=False,
                              synonyms=[syn], config_source=3)
        level = SimpleNamespace(name="root", value="INFO", is_sensitive=False, synonyms=[],
                                config_source=6)
        return {names[0]: (0, None, [level] if resource_type == RESOURCE_BROKER_LOGGER
                           else [row])}


def run_tool(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(configs, "KafkaAdmin", FakeAdmin)
    FakeAdmin.sent, FakeAdmin.described = [], []
    out, err = io.StringIO(), io.StringIO()
    status = configs.main([*BOOT, *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_alter_the_brokers_default(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_tool(monkeypatch, [
        "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
        "log.retention.ms=1000,max.connections.per.ip.overrides=[a:1,b:2]",
        "--delete-config", "num.io.threads"])
    assert (status, err) == (0, "")
    assert out == "Completed updating default config for brokers in the cluster.\n"
    assert FakeAdmin.sent == [(RESOURCE_BROKER, "", [
        ("log.retention.ms", 0, "1000"), ("max.connections.per.ip.overrides", 0, "a:1,b:2"),
        ("num.io.threads", 1, None)])]


def test_a_refused_value_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_tool(monkeypatch, [
        "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
        "log.retention.ms=bad"])
    assert status == 1 and out == ""
    assert "Invalid value bad for configuration log.retention.ms" in err
    assert "INVALID_CONFIG" in err and "broker '1'" in err


def test_describe_the_default_and_loggers(monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, _ = run_tool(monkeypatch, ["--describe", "--entity-type", "brokers",
                                            "--entity-default"])
    assert status == 0 and FakeAdmin.described == [(RESOURCE_BROKER, [""])]
    assert out == ("Default configs for brokers in the cluster are:\n"
                   "  log.retention.ms=1000 sensitive=false "
                   "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}\n")
    status, out, _ = run_tool(monkeypatch, ["--describe", "--entity-type", "broker-loggers",
                                            "--entity-name", "0"])
    assert status == 0 and FakeAdmin.described == [(RESOURCE_BROKER_LOGGER, ["0"])]
    assert out == "Configs for broker-logger 0 are:\n  root=INFO sensitive=false synonyms={}\n"
    status, out, _ = run_tool(monkeypatch, [
        "--alter", "--entity-type", "broker-loggers", "--entity-name", "0",
        "--add-config", "broker.handlers=DEBUG", "--delete-config", "storage"])
    assert status == 0 and out == "Completed updating config for broker-logger 0.\n"
    assert FakeAdmin.sent == [(RESOURCE_BROKER_LOGGER, "0", [
        ("broker.handlers", 0, "DEBUG"), ("storage", 1, None)])]


def test_entity_default_is_refused_for_topics_and_loggers(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    status, _, err = run_tool(monkeypatch, ["--describe", "--entity-type", "broker-loggers",
                                            "--entity-default"])
    assert status == 1 and "--entity-default is not valid" in err
