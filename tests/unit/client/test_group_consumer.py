"""client.group_consumer.GroupConsumer's member state machine against a fake
coordinator (the group verbs replaced, no sockets): KIP-394 member id, the
leader's assignment, committed offsets vs the reset policy, a rejoin flagged by
a heartbeat (eager revoke first), commits with the generation, leaving on close.
The real thing against brokers: tests/integration/test_operator_tools.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from client import group_consumer as gc
from client.consumer import EARLIEST
from client.consumer_protocol import decode_assignment, decode_subscription, encode_assignment
from client.groups import CommittedOffset, Coordinator, FetchedOffsets, JoinedMember, JoinResult
from protocol.errors import ErrorCode


@dataclass
class TopicInfo:
    error: int = 0
    partitions: dict[int, Any] = field(default_factory=lambda: {0: 1, 1: 1, 2: 1})


class FakeAdmin:
    class pool:                      # noqa: N801 - what GroupConsumer reads of the pool
        client_id, security, timeout = "c", None, 30.0

    async def any_connection(self) -> str:
        return "any"

    async def metadata(self, topics: list[str]) -> Any:
        return type("M", (), {"topics": {t: TopicInfo() for t in topics}})()


class FakeConsumer:
    def __init__(self, admin: Any, topic: str, **kw: Any) -> None:
        self.topic = topic
        self.positions: dict[int, int] = {}
        self.seeks: list[tuple[list[int], int]] = []

    async def seek(self, parts: list[int], where: int) -> None:
        self.seeks.append((parts, where))
        self.positions.update({p: 0 for p in parts})

    async def refresh(self) -> None:
        pass

    async def poll(self, max_wait_ms: int) -> list:
        return []


class FakeConn:
    closed = False


class FakePool:
    def __init__(self, **kw: Any) -> None:
        pass

    async def get(self, host: str, port: int) -> FakeConn:
        return FakeConn()

    async def close(self) -> None:
        pass


class Coordinator_:
    """Scripted answers; records what the member sent."""

    def __init__(self) -> None:
        self.joins: list[dict[str, Any]] = []
        self.syncs: list[dict[str, Any]] = []
        self.join_answers: list[JoinResult] = []
        self.sync_answers: list[tuple[int, bytes] | None] = []
        self.heartbeat_errors: list[int] = []
        self.commits: list[tuple[dict, int, str]] = []
        self.left: list[str] = []
        self.committed = {("t", 0): 5}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        async def find(conn: Any, group: str) -> Coordinator:
            return Coordinator(0, 1, "h", 9)

        async def join(conn: Any, group: str, **kw: Any) -> JoinResult:
            self.joins.append(kw)
            return self.join_answers.pop(0)

        async def sync(conn: Any, group: str, **kw: Any) -> tuple[int, bytes]:
            self.syncs.append(kw)
            answer = self.sync_answers.pop(0)
            if answer is None:                  # echo what the leader gave this member
                return 0, kw["assignments"][kw["member_id"]]
            return answer

        async def heartbeat(conn: Any, group: str, **kw: Any) -> int:
            return self.heartbeat_errors.pop(0) if self.heartbeat_errors else 0

        async def fetch(conn: Any, group: str, tps: Any) -> FetchedOffsets:
            return FetchedOffsets(0, {tp: CommittedOffset(0, self.committed.get(tp, -1))
                                      for tp in tps})

        async def commit(conn: Any, group: str, offsets: Any, *, generation_id: int,
                         member_id: str) -> dict:
            self.commits.append((dict(offsets), generation_id, member_id))
            return {tp: 0 for tp in offsets}

        async def leave(conn: Any, group: str, member_id: str) -> int:
            self.left.append(member_id)
            return 0

        for name, fn in [("find_coordinator", find), ("join_group", join),
                         ("sync_group", sync), ("heartbeat", heartbeat),
                         ("offset_fetch", fetch), ("offset_commit", commit),
                         ("leave_group", leave)]:
            monkeypatch.setattr(gc, name, fn)
        monkeypatch.setattr(gc, "Consumer", FakeConsumer)
        monkeypatch.setattr(gc, "BrokerPool", FakePool)
        monkeypatch.setattr(gc, "RETRY_BACKOFF_S", 0)


def member(mid: str) -> JoinedMember:
    from client.consumer_protocol import encode_subscription
    return JoinedMember(mid, None, encode_subscription(["t"]))


def test_join_as_leader_then_rejoin_as_follower(monkeypatch: pytest.MonkeyPatch) -> None:
    coord = Coordinator_()
    coord.install(monkeypatch)
    coord.join_answers = [
        JoinResult(int(ErrorCode.MEMBER_ID_REQUIRED), member_id="m1"),
        JoinResult(0, 1, "range", "m1", "m1", (member("m1"), member("m2"))),
        JoinResult(0, 2, "range", "m2", "m1"),
    ]
    coord.sync_answers = [None, (0, encode_assignment([("t", 2)]))]
    events: list[tuple[str, list]] = []

    async def scenario() -> gc.GroupConsumer:
        c = gc.GroupConsumer(FakeAdmin(), "g", ["t"], heartbeat_interval_ms=10,  # type: ignore
                             session_timeout_ms=300, reset_to=EARLIEST,
                             on_assigned=lambda tps: events.append(("assigned", tps)),
                             on_revoked=lambda tps: events.append(("revoked", tps)))
        await c.poll(1)
        assert c.member_id == "m1" and c.generation == 1
        assert c.assignment == [("t", 0), ("t", 1)]            # range: m1 gets 0-1, m2 gets 2
        fake = c._consumers["t"]
        assert fake.positions == {0: 5, 1: 0}                  # committed / reset to earliest
        assert fake.seeks == [([1], EARLIEST)]
        assert await c.commit() == {("t", 0): 0, ("t", 1): 0}
        coord.heartbeat_errors = [int(ErrorCode.REBALANCE_IN_PROGRESS)]
        for _ in range(50):                                   # the heartbeat task notices
            if c._rejoin:
                break
            await asyncio.sleep(0.01)
        await c.poll(1)
        assert c.generation == 2 and c.assignment == [("t", 2)]
        await c.close()
        return c

    c = asyncio.run(scenario())
    assert [j["member_id"] for j in coord.joins] == ["", "m1", "m1"]
    assert decode_subscription(coord.joins[0]["protocols"][0][1]) == ["t"]
    plan = {m: decode_assignment(a) for m, a in coord.syncs[0]["assignments"].items()}
    assert plan == {"m1": [("t", 0), ("t", 1)], "m2": [("t", 2)]}
    assert coord.syncs[1]["assignments"] is None               # a follower sends none
    assert events == [("assigned", [("t", 0), ("t", 1)]), ("revoked", [("t", 0), ("t", 1)]),
                      ("assigned", [("t", 2)]), ("revoked", [("t", 2)])]
    assert coord.commits[0] == ({("t", 0): 5, ("t", 1): 0}, 1, "m1")
    assert coord.left == ["m1"] and c.assignment == []


def test_unknown_member_joins_afresh_and_reset_none_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    coord = Coordinator_()
    coord.install(monkeypatch)
    coord.committed = {}
    coord.join_answers = [JoinResult(int(ErrorCode.UNKNOWN_MEMBER_ID)),
                          JoinResult(0, 1, "range", "m1", "m1", (member("m1"),))]
    coord.sync_answers = [None]

    async def scenario() -> None:
        c = gc.GroupConsumer(FakeAdmin(), "g", ["t"], reset_to=None)  # type: ignore[arg-type]
        c.member_id = "stale"
        with pytest.raises(gc.ConsumerError, match="reset policy is none"):
            await c.poll(1)
        await c.close()

    asyncio.run(scenario())
    assert [j["member_id"] for j in coord.joins] == ["stale", ""]


def test_a_fatal_join_error_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    coord = Coordinator_()
    coord.install(monkeypatch)
    coord.join_answers = [JoinResult(int(ErrorCode.GROUP_AUTHORIZATION_FAILED))]

    async def scenario() -> None:
        c = gc.GroupConsumer(FakeAdmin(), "g", ["t"])  # type: ignore[arg-type]
        with pytest.raises(gc.ConsumerError, match="GROUP_AUTHORIZATION_FAILED"):
            await c.poll(1)
        await c.close()

    asyncio.run(scenario())
