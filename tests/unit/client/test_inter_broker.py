"""client.inter_broker.controlled_shutdown over a fake connection: the request
it builds (through the real codec at each version) and the answer it reads."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from client.inter_broker import controlled_shutdown
from protocol.api_keys import ApiKey
from protocol.codec import decode, encode
from protocol.errors import ErrorCode
from protocol.spec import api

REQ = api(ApiKey.CONTROLLED_SHUTDOWN).request
RESP = api(ApiKey.CONTROLLED_SHUTDOWN).response


class FakeController:
    """Answers each ControlledShutdown with ``error`` and ``remaining``, at ``version``."""

    def __init__(self, version: int, error: int, remaining: list[tuple[str, int]]) -> None:
        self.version = version
        self.error = error
        self.remaining = remaining
        self.sent: list[Any] = []

    async def request(self, api_key: int, body: Any, version: int | None = None) -> Any:
        assert api_key == ApiKey.CONTROLLED_SHUTDOWN and version is None
        self.sent.append(decode(REQ, encode(body, self.version), self.version))
        resp = RESP.new(error_code=self.error, remaining_partitions=[
            RESP.structs["RemainingPartition"].new(topic_name=t, partition_index=p)
            for t, p in self.remaining])
        return decode(RESP, encode(resp, self.version), self.version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_controlled_shutdown_sends_the_broker_and_reads_what_remains(version: int) -> None:
    ctl = FakeController(version, ErrorCode.NONE, [("t", 0), ("u", 2)])
    error, remaining = asyncio.run(controlled_shutdown(ctl, 4, 99))  # type: ignore[arg-type]
    assert error == ErrorCode.NONE and remaining == [("t", 0), ("u", 2)]
    assert ctl.sent[0].broker_id == 4
    assert ctl.sent[0].broker_epoch == (99 if version >= 2 else -1)


def test_controlled_shutdown_returns_the_error() -> None:
    ctl = FakeController(3, ErrorCode.STALE_BROKER_EPOCH, [])
    assert asyncio.run(controlled_shutdown(ctl, 1, 5)) == (  # type: ignore[arg-type]
        ErrorCode.STALE_BROKER_EPOCH, [])
