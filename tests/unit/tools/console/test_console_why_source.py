"""The why adapter (tools/console/why_source.py): the facts when client.why_admin
answers, and "why unavailable: <reason>" (never an exception) when it is
missing, fails or does not answer in time."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from protocol.why_model import BrokerStatus
from tools.console import why_source
from tools.console.why_source import ClientWhySource


def fake_module(**fns: Any) -> types.ModuleType:
    m = types.ModuleType("client.why_admin")
    for name, fn in fns.items():
        setattr(m, name, fn)
    return m


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_answers_from_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def describe_broker_status(admin: Any, broker_id: int) -> BrokerStatus:
        seen.append((admin, broker_id))
        return BrokerStatus(broker_id, "CONNECTED", True, broker_id, 5)

    monkeypatch.setattr(why_source.importlib, "import_module",
                        lambda name: fake_module(describe_broker_status=describe_broker_status))
    src = ClientWhySource("ADMIN")  # type: ignore[arg-type]
    answer = run(src.broker(3))
    assert answer.value == BrokerStatus(3, "CONNECTED", True, 3, 5) and not answer.unavailable
    assert seen == [("ADMIN", 3)]
    assert "has no describe_group_why" in run(src.group("g")).unavailable


def test_missing_module_failures_and_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(why_source.importlib, "import_module", missing)
    answer = run(ClientWhySource(None).partition("t", 0))  # type: ignore[arg-type]
    assert answer.value is None and "client.why_admin cannot be imported" in answer.unavailable

    async def boom(admin: Any, topic: str, partition: int) -> Any:
        raise ConnectionRefusedError("refused")

    async def slow(admin: Any, group_id: str) -> Any:
        await asyncio.sleep(10)

    monkeypatch.setattr(why_source.importlib, "import_module",
                        lambda name: fake_module(describe_partition_why=boom,
                                                 describe_group_why=slow))
    src = ClientWhySource(None, timeout_s=0.05)  # type: ignore[arg-type]
    assert run(src.partition("t", 0)).unavailable == "ConnectionRefusedError: refused"
    assert run(src.group("g")).unavailable == "no answer within 0.05 s"
