"""The follower's incremental fetch session (RemoteLeaderEndpoint, KIP-227) over a
fake connection that records each Fetch request and answers a scripted response."""

from __future__ import annotations

import asyncio
from typing import Any

from broker.replication.leader_endpoint import FetchRequestPartition, RemoteLeaderEndpoint
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.spec import api

RESP = api(ApiKey.FETCH).response


def answer(session_id: int, parts: dict[tuple[str, int], int], error: int = 0) -> Any:
    """A Fetch response with an HW per answered partition."""
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), hw in parts.items():
        by_topic.setdefault(topic, []).append(RESP.structs["PartitionData"].new(
            partition_index=index, high_watermark=hw, log_start_offset=0, records=b""))
    return RESP.new(error_code=error, session_id=session_id, responses=[
        RESP.structs["FetchableTopicResponse"].new(topic=t, partitions=ps)
        for t, ps in by_topic.items()])


class FakeConnection:
    closed = False

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.sent: list[Any] = []

    def version_for(self, key: int, cap: int | None = None) -> int:
        return 12

    async def request(self, key: int, body: Any, version: int, timeout: float = 0) -> Any:
        self.sent.append(body)
        return self.answers.pop(0)

    async def close(self) -> None:
        pass


def sent_partitions(body: Any) -> set[tuple[str, int]]:
    return {(t.topic, p.partition) for t in body.topics for p in t.partitions}


def req(offset: int) -> FetchRequestPartition:
    return FetchRequestPartition(offset, 3, 3, 0, 1 << 20)


def test_full_then_incremental_then_forget_then_start_over_after_a_session_error() -> None:
    async def main() -> None:
        a, b, c = ("t", 0), ("t", 1), ("t", 2)
        conn = FakeConnection([answer(77, {a: 5, b: 5, c: 5}), answer(0, {a: 6}),
                               answer(0, {}), answer(0, {}, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                               answer(78, {a: 7, c: 5})])
        ep = RemoteLeaderEndpoint(1, 2, lambda _id: ("127.0.0.1", 1))
        ep._conn = conn                                       # type: ignore[assignment]
        state = {a: req(5), b: req(5), c: req(5)}
        got = await ep.fetch(state)
        body = conn.sent[-1]
        assert (body.session_id, body.session_epoch) == (0, 0) and sent_partitions(body) == {a, b, c}
        assert set(got) == {a, b, c} and ep.session_id == 77

        state[a] = req(6)                  # only a moved: only a is sent
        got = await ep.fetch(state)
        body = conn.sent[-1]
        assert (body.session_id, body.session_epoch) == (77, 1) and sent_partitions(body) == {a}
        assert body.forgotten_topics_data == [] and got[a].high_watermark == 6

        del state[b]                       # b no longer fetched: forgotten, nothing sent
        await ep.fetch(state)
        body = conn.sent[-1]
        assert body.session_epoch == 2 and sent_partitions(body) == set()
        assert [(t.topic, t.partitions) for t in body.forgotten_topics_data] == [("t", [1])]

        assert await ep.fetch(state) == {}  # the leader lost the session
        await ep.fetch(state)              # so the next request is full again
        body = conn.sent[-1]
        assert body.session_epoch == 0 and sent_partitions(body) == {a, c}
        assert ep.session_id == 78 and ep.session_epoch == 1
    asyncio.run(main())
