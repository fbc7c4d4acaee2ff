"""broker/replication/record_checks.py: heavy produce data (compressed, or many records)
is validated in a worker thread, the event loop going on meanwhile; its refusals reach
the response exactly as an inline validation's would."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from broker.replication import record_checks
from protocol.compression import Codec
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage.config import LogConfig
from tests.unit.broker.replication.fakes import FakeBroker, FakeClock

NOW = FakeClock().now_ms


def test_what_is_heavy() -> None:
    assert not record_checks.is_heavy(build_batch([(b"k", b"v", NOW)] * 10))
    assert record_checks.is_heavy(build_batch([(b"k", b"v", NOW)] * 10, codec=Codec.GZIP))
    many = build_batch([(b"k", b"v", NOW)] * (record_checks.HEAVY_RECORDS + 1))
    assert record_checks.is_heavy(many)
    assert not record_checks.is_heavy(b"")


def _broker(tmp_path: Path) -> FakeBroker:
    b = FakeBroker(tmp_path, config=LogConfig(cleanup_policy="compact"))
    b.lead("t")
    return b


def test_heavy_data_is_checked_in_a_thread_while_the_loop_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = _broker(tmp_path)
    real = record_checks.validate_records
    seen: list[str] = []
    ticked = threading.Event()

    def slow(*args: Any, **kw: Any) -> Any:
        seen.append(threading.current_thread().name)
        # a long walk, over once the loop has ticked 10 times meanwhile (however slow
        # the machine); a loop that waited for it would never tick: 10 s turns that
        # into a failure, not a hang
        ticked.wait(10)
        return real(*args, **kw)
    monkeypatch.setattr(record_checks, "validate_records", slow)
    good = build_batch([(b"k", b"v", NOW)] * 5, codec=Codec.GZIP)
    keyless = build_batch([(b"k", b"v", NOW), (None, b"v", NOW)], codec=Codec.GZIP)

    async def go() -> tuple[dict[Any, Any], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
                if ticks >= 10:
                    ticked.set()
        t = asyncio.create_task(ticker())
        out = await record_checks.check_heavy(
            b.replicas.partitions, {("t", 0): good, ("t", 1): keyless,
                                    ("absent", 0): good}, b.clock)
        t.cancel()
        return out, ticks
    out, ticks = asyncio.run(go())
    assert ticks >= 10                                   # the loop ran during the walk
    assert seen and all(n != threading.main_thread().name for n in seen)
    assert out[("t", 0)] is None and ("absent", 0) not in out
    assert ("t", 1) not in out                           # not led here: left to the append


def test_a_refusal_found_in_the_thread_is_the_partition_s_answer(tmp_path: Path) -> None:
    b = _broker(tmp_path)
    keyless = build_batch([(b"k", b"v", NOW), (None, b"v", NOW)], codec=Codec.GZIP)

    async def go() -> Any:
        return await b.replicas.appends.append_records(1, 1000, {("t", 0): keyless})
    r = asyncio.run(go())[("t", 0)]
    assert r.error == ErrorCode.INVALID_RECORD
    assert r.record_errors == ((1, "Compacted topic cannot accept message without key in "
                                   "topic partition t-0"),)
    assert b.replicas.partition("t", 0).log_end_offset == 0
