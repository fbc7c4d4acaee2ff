"""Where the console gets the broker's *why* facts: one adapter over
``client/why_admin.py`` (the DescribeWhy admin API), so that pages depend on
the dataclasses of ``protocol/why_model.py`` only and tests can hand in fakes.

``WhySource`` is the seam: three coroutines answering a ``WhyAnswer`` — the
dataclass, or None with the reason it is unavailable (the module missing, the
broker not speaking the API, the broker down). A page shows "why unavailable:
<reason>" then, and everything else it knows from the ordinary APIs.

``ClientWhySource`` calls ``client.why_admin`` when it can be imported (looked
up once, at first use; an import failure is kept as the reason), each call
bounded by ``timeout_s`` so a dead broker cannot stall a page.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar

from client.admin import KafkaAdmin
from protocol.why_model import BrokerStatus, GroupWhy, PartitionWhy

T = TypeVar("T")
WHY_MODULE = "client.why_admin"


@dataclass(frozen=True)
class WhyAnswer(Generic[T]):
    value: T | None
    unavailable: str = ""            # why there is no value ("" when there is one)


class WhySource(Protocol):
    async def partition(self, topic: str, partition: int) -> WhyAnswer[PartitionWhy]: ...

    async def group(self, group_id: str) -> WhyAnswer[GroupWhy]: ...

    async def broker(self, broker_id: int) -> WhyAnswer[BrokerStatus]: ...


class ClientWhySource:
    """The DescribeWhy verbs of ``client.why_admin`` over one KafkaAdmin."""

    def __init__(self, admin: KafkaAdmin, *, timeout_s: float = 5.0) -> None:
        self.admin = admin
        self.timeout_s = timeout_s
        self._module: ModuleType | None = None
        self._import_error = ""

    def _why_module(self) -> ModuleType | None:
        if self._module is None and not self._import_error:
            try:
                self._module = importlib.import_module("client.why_admin")
            except Exception as e:  # noqa: BLE001 - a half-written or missing module
                self._import_error = f"{WHY_MODULE} cannot be imported ({type(e).__name__}: {e})"
        return self._module

    async def _call(self, name: str, *args: Any) -> WhyAnswer[Any]:
        module = self._why_module()
        if module is None:
            return WhyAnswer(None, self._import_error)
        fn = getattr(module, name, None)
        if fn is None:
            return WhyAnswer(None, f"{WHY_MODULE} has no {name}")
        try:
            return WhyAnswer(await asyncio.wait_for(fn(self.admin, *args), self.timeout_s))
        except asyncio.TimeoutError:
            return WhyAnswer(None, f"no answer within {self.timeout_s:g} s")
        except Exception as e:  # noqa: BLE001 - any failure is shown, never a 500
            return WhyAnswer(None, f"{type(e).__name__}: {e}")

    async def partition(self, topic: str, partition: int) -> WhyAnswer[PartitionWhy]:
        return await self._call("describe_partition_why", topic, partition)

    async def group(self, group_id: str) -> WhyAnswer[GroupWhy]:
        return await self._call("describe_group_why", group_id)

    async def broker(self, broker_id: int) -> WhyAnswer[BrokerStatus]:
        return await self._call("describe_broker_status", broker_id)


__all__ = ["ClientWhySource", "WhyAnswer", "WhySource"]
