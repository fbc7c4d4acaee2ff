"""Committed offsets written, then replayed (coordinator/group/classic/offset_records.py):
the replay rules, and through the coordinator on an in-memory log that a write that
fails changes nothing, and that what a coordinator serves is what the next one loads."""

from __future__ import annotations

from typing import Any

from coordinator.group.classic import offset_records
from coordinator.group.classic import offsets_topic as ot
from coordinator.group.classic.group_coordinator import GroupCoordinator
from protocol.errors import ErrorCode
from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.coordinator.group.classic.test_group_coordinator import MemoryLog, loaded, \
    make, run

TP, OTHER = ("t", 0), ("t", 1)


def test_replay_sets_replaces_and_removes_from_the_written_bytes() -> None:
    offsets: dict[tuple[str, int], ot.OffsetAndMetadata] = {}
    written = offset_records.commit_records("g", {TP: ot.OffsetAndMetadata(5, "m", 1)})
    offset_records.replay_written(offsets, "g", written)
    assert offsets == {TP: ot.read_offset_value(written[0][1] or b"")}
    assert offsets[TP].offset == 5 and offsets[TP].metadata == "m"
    offset_records.replay_written(offsets, "g", offset_records.commit_records(
        "g", {TP: ot.OffsetAndMetadata(9)}))
    assert offsets[TP].offset == 9
    # another group's records and the group's metadata tombstone are not its offsets
    offset_records.replay_written(offsets, "g", [
        *offset_records.tombstones("other-group", [TP]), (ot.group_metadata_key("g"), None)])
    assert offsets[TP].offset == 9
    tomb = offset_records.tombstones("g", [TP, OTHER])
    offset_records.replay_written(offsets, "g", tomb)
    offset_records.replay_written(offsets, "g", tomb)       # twice: harmless
    assert offsets == {}


async def started(**config: Any) -> tuple[FakeClock, MemoryLog, GroupCoordinator]:
    """A coordinator over an in-memory log, its partition loaded."""
    clock, log = FakeClock(), MemoryLog()
    c = make(clock, log, **config)
    await loaded(c)
    return clock, log, c


def test_offset_delete_whose_tombstones_fail_removes_nothing_and_says_so() -> None:
    async def body() -> None:
        clock, log, c = await started()
        await c.offsets.commit("g", "", None, -1, {TP: ot.OffsetAndMetadata(3),
                                                  OTHER: ot.OffsetAndMetadata(4)})
        log.error = ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await c.offsets.delete("g", [TP]) == (ErrorCode.NONE,
                                                     {TP: ErrorCode.NOT_COORDINATOR})
        assert c.offsets.fetch("g", [TP])[1][TP][0] == 3       # still served: still logged
        log.error = ErrorCode.NONE
        assert await c.offsets.delete("g", [TP]) == (ErrorCode.NONE, {TP: ErrorCode.NONE})
        assert c.offsets.fetch("g", [TP, OTHER])[1] == {TP: (-1, -1, "", 0),
                                                        OTHER: (4, -1, "", 0)}
    run(body())


def test_expiry_whose_tombstones_fail_keeps_the_group_and_its_offsets() -> None:
    async def body() -> None:
        clock, log, c = await started(offsets_retention_minutes=1)
        await c.offsets.commit("g", "", None, -1, {TP: ot.OffsetAndMetadata(3, "", clock())})
        clock.advance(60_000)
        log.error = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await c.offsets.expire() == 0
        assert "g" in c.groups and c.offsets.fetch("g", [TP])[1][TP][0] == 3
        log.error = ErrorCode.NONE
        assert await c.offsets.expire() == 1
        assert "g" not in c.groups
    run(body())


def test_what_a_coordinator_serves_is_what_the_next_one_loads() -> None:
    async def body() -> None:
        clock, log, c = await started(offsets_retention_minutes=1)
        await c.offsets.commit("g", "", None, -1, {TP: ot.OffsetAndMetadata(1, "a", clock())})
        clock.advance(30_000)
        await c.offsets.commit("g", "", None, -1, {OTHER: ot.OffsetAndMetadata(2, "b", clock()),
                                                  ("u", 0): ot.OffsetAndMetadata(7)})
        await c.offsets.delete("g", [("u", 0)])
        clock.advance(30_000)                 # TP expires, OTHER not yet
        assert await c.offsets.expire() == 1
        served = c.offsets.fetch("g", None)
        again = make(clock, log, offsets_retention_minutes=1)
        await loaded(again)
        assert again.offsets.fetch("g", None) == served == (
            ErrorCode.NONE, {OTHER: (2, -1, "b", 0)})
        assert c.committed.committed("g") == again.committed.committed("g")
    run(body())
