"""Transactional offset commits in the group coordinator over an in-memory
__consumer_offsets that keeps transactional records and markers: pending until the
marker, applied on COMMIT, dropped on ABORT, UNSTABLE_OFFSET_COMMIT for
require_stable fetches, KIP-447 fencing, and a reload that replays markers and keeps
still-open transactions pending."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from coordinator.group.classic import offsets_topic as ot
from coordinator.runtime.log_seam import LogEntry, TxnEnd, TxnRecord
from protocol.errors import ErrorCode
from tests.unit.coordinator.group.classic.test_group_coordinator import MemoryLog, loaded, make, \
    settle, stable_group
from tests.unit.broker.replication.fakes import FakeClock

TP = ("in", 0)


class TxnLog(MemoryLog):
    """Keeps a transactional append's records as TxnRecord entries, and markers."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[int, list[LogEntry]] = {}

    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]], *,
                     acks: int, timeout_ms: int, timestamp: int,
                     producer: tuple[int, int] | None = None) -> int:
        if self.error:
            return self.error
        out = self.entries.setdefault(partition, [])
        if producer is None:
            out.extend(records)
        else:
            out.extend(TxnRecord(producer[0], k, v) for k, v in records)
        return ErrorCode.NONE

    def mark(self, partition: int, producer_id: int, commit: bool) -> None:
        self.entries.setdefault(partition, []).append(TxnEnd(producer_id, commit))

    def read_chunks(self, partition: int) -> Iterator[list[LogEntry]]:  # type: ignore[override]
        return iter([list(self.entries.get(partition, []))])


def offset(n: int) -> ot.OffsetAndMetadata:
    return ot.OffsetAndMetadata(offset=n, metadata="", commit_timestamp=1)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_pending_until_commit_marker_then_visible() -> None:
    async def body() -> None:
        clock, log = FakeClock(), TxnLog()
        c = make(clock, log)
        await loaded(c)
        assert await c.txn.commit("g", 7, 0, "", None, -1, {TP: offset(5)}) == {TP: 0}
        assert isinstance(log.entries[0][-1], TxnRecord)
        assert c.offsets.fetch("g", [TP])[1][TP][0] == -1                   # not visible
        assert c.offsets.fetch("g", [TP], require_stable=True)[1][TP][3] == \
            ErrorCode.UNSTABLE_OFFSET_COMMIT
        assert c.txn.complete(7, [0], commit=True) == 1
        assert c.offsets.fetch("g", [TP], require_stable=True)[1][TP][:1] == (5,)
    run(body())


def test_abort_marker_drops_them_and_other_partitions_are_untouched() -> None:
    async def body() -> None:
        clock, log = FakeClock(), TxnLog()
        c = make(clock, log)
        await loaded(c)
        await c.txn.commit("g", 7, 0, "", None, -1, {TP: offset(5)})
        assert c.txn.complete(7, [3], commit=True) == 0             # another partition
        assert c.txn.complete(7, [0], commit=False) == 1
        assert c.offsets.fetch("g", [TP])[1][TP][0] == -1
        assert "g" not in c.committed     # nothing left: the entry goes
    run(body())


def test_kip_447_member_and_generation_are_checked() -> None:
    async def body() -> None:
        clock, log = FakeClock(), TxnLog()
        c = make(clock, log)
        await loaded(c)
        [member] = await stable_group(c, clock, 1)
        ok = await c.txn.commit("g", 7, 0, member.member_id, None, member.generation_id,
                                        {TP: offset(1)})
        assert ok == {TP: ErrorCode.NONE}
        assert await c.txn.commit("g", 7, 0, "stranger", None, member.generation_id,
                                          {TP: offset(2)}) == {TP: ErrorCode.UNKNOWN_MEMBER_ID}
        assert await c.txn.commit("g", 7, 0, member.member_id, None,
                                          member.generation_id + 1, {TP: offset(2)}) == {
            TP: ErrorCode.ILLEGAL_GENERATION}
        log.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await c.txn.commit("g", 8, 0, "", None, -1, {TP: offset(3)}) == {
            TP: ErrorCode.NOT_COORDINATOR}
        assert 8 not in c.committed.of("g").pending_txn
    run(body())


def test_reload_applies_committed_drops_aborted_and_keeps_open_pending() -> None:
    async def body() -> None:
        clock, log = FakeClock(), TxnLog()
        c = make(clock, log)
        await loaded(c)
        other = ("in", 1)
        await c.txn.commit("g", 1, 0, "", None, -1, {TP: offset(10)})
        await c.txn.commit("g", 2, 0, "", None, -1, {other: offset(20)})
        await c.txn.commit("h", 3, 0, "", None, -1, {TP: offset(30)})
        log.mark(0, 1, commit=True)
        log.mark(0, 2, commit=False)
        fresh = make(clock, log)
        await loaded(fresh)
        await settle()
        assert fresh.offsets.fetch("g", [TP, other])[1] == {
            TP: (10, -1, "", 0), other: (-1, -1, "", 0)}
        assert fresh.committed.of("h").pending_txn == {3: {TP: offset(30)}}
        assert "h" in fresh.groups          # a simple classic group owns them
        fresh.txn.complete(3, [0], commit=True)                     # the late marker
        assert fresh.offsets.fetch("h", [TP])[1][TP][0] == 30
    run(body())
