"""GroupAdmin: the consumer-group verbs of ``groups.py`` routed to coordinators,
with the retries Kafka's admin client makes (what ``pybroker consumer-groups``
needs; the next tools and the console use it too).

Routing: FindCoordinator at any broker, then the request at the coordinator.
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS
(the coordinator moved, or is loading ``__consumer_offsets``) mean: find it
again and resend, until the timeout. Other errors are returned to the caller,
or raised as ``KafkaError`` where the method returns no error codes.

Both kinds of group (classic and KIP-848 consumer groups) are listed with their
type (``list_group_listings``) and described as one ``ConsumerGroupDescription``
(``describe_group``: ConsumerGroupDescribe, falling back to DescribeGroups;
consumer_group_admin.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.consumer_group_admin import CLASSIC, ConsumerGroupDescription, \
    classic_description, consumer_group_describe
from client.groups import (CommittedOffset, DescribedGroup, ListedGroup, delete_groups,
                           describe_groups, find_coordinator, list_groups, offset_commit,
                           offset_delete, offset_fetch)
from client.security import ClientSecurity
from client.verbs import TP
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError

T = TypeVar("T")
RETRIABLE_COORDINATOR = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                   ErrorCode.NOT_COORDINATOR,
                                   ErrorCode.COORDINATOR_NOT_AVAILABLE})
RETRY_BACKOFF_S = 0.1
# ConsumerGroupDescribe answers that send us to DescribeGroups: not a consumer group
# (a classic one, or none), or the consumer protocol turned off on the broker
FALL_BACK = frozenset({ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION})


class GroupAdmin:
    """Group administration over one ``KafkaAdmin`` (its metadata and connection pool)."""

    def __init__(self, servers: str | list[str], timeout_ms: int, *,
                 security: ClientSecurity | None = None) -> None:
        self.timeout = timeout_ms / 1000
        self.admin = KafkaAdmin(servers, timeout=self.timeout, security=security)

    async def close(self) -> None:
        await self.admin.close()

    async def _retry(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Call ``fn()`` until it returns without a retriable ``KafkaError`` or the
        timeout passes (then the last error is raised)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return await fn()
            except KafkaError as e:
                if not e.retriable or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def find_coordinator(self, group: str) -> tuple[int, str, int]:
        """-> (node id, host, port) of the group's coordinator."""
        async def once() -> tuple[int, str, int]:
            c = await find_coordinator(await self.admin.any_connection(), group)
            if c.error:
                raise KafkaError(c.error, c.message)
            return c.node_id, c.host, c.port
        return await self._retry(once)

    async def at_coordinator(self, group: str, call: Callable[[KafkaConnection], Awaitable[T]],
                             error_of: Callable[[T], int]) -> T:
        """``call(conn)`` at the group's coordinator; found again and resent
        while ``error_of(result)`` says the coordinator moved or is loading."""
        async def once() -> T:
            _, host, port = await self.find_coordinator(group)
            result = await call(await self.admin.pool.get(host, port))
            code = error_of(result)
            if code in RETRIABLE_COORDINATOR:
                raise KafkaError(code)
            return result
        return await self._retry(once)

    async def list_groups(self, states: set[str]) -> list[tuple[str, str]]:
        """[(group id, state)] of consumer groups (both kinds), asked of every
        broker (each lists the groups it coordinates); sorted by id."""
        return [(g.group_id, g.state) for g in await self.list_group_listings(states)]

    async def list_group_listings(self, states: set[str],
                                  types: set[str] | frozenset[str] = frozenset()
                                  ) -> list[ListedGroup]:
        """Consumer groups of both kinds (classic ones with protocol type
        "consumer" or "", and KIP-848 consumer groups) with state and type, from
        every broker; filtered by ``states`` and ``types`` ("classic",
        "consumer"; empty: all); sorted by id. A broker too old to filter (or to
        report a type: every group is classic there) is filtered here."""
        cluster = await self.admin.metadata([])
        found: dict[str, ListedGroup] = {}
        for b in cluster.brokers.values():
            async def once(host: str = b.host, port: int = b.port) -> list[ListedGroup]:
                conn = await self.admin.pool.get(host, port)
                error, groups = await list_groups(conn, states, types)
                if error:
                    raise KafkaError(error)
                return groups
            for g in await self._retry(once):
                if g.group_type == "consumer" or g.protocol_type in ("consumer", ""):
                    found[g.group_id] = g
        out = sorted(found.values(), key=lambda g: g.group_id)
        if states:          # v4+ brokers filtered already; below v4 no state is known
            out = [g for g in out if g.state in states]
        if types:
            out = [g for g in out if (g.group_type or CLASSIC) in types]
        return out

    async def describe_group(self, group: str
                             ) -> tuple[ConsumerGroupDescription, tuple[int, str, int]]:
        """-> (the group, of either kind, its coordinator (node, host, port)):
        ConsumerGroupDescribe at the coordinator, DescribeGroups where that says
        GROUP_ID_NOT_FOUND (a classic group, or none: "Dead"), UNSUPPORTED_VERSION
        (consumer groups turned off) or is not spoken.
        KafkaError on a group-level error."""
        async def call(conn: KafkaConnection) -> ConsumerGroupDescription:
            if conn.supports(ApiKey.CONSUMER_GROUP_DESCRIBE):
                d = (await consumer_group_describe(conn, [group]))[0]
                if d.error not in FALL_BACK:
                    return d
            return classic_description((await describe_groups(conn, [group]))[0])
        coordinator = await self.find_coordinator(group)
        described = await self.at_coordinator(group, call, lambda d: d.error)
        if described.error:
            raise KafkaError(described.error, described.error_message)
        return described, coordinator

    async def describe(self, group: str) -> tuple[DescribedGroup, tuple[int, str, int]]:
        """-> (the group, its coordinator (node, host, port)); KafkaError on a
        group-level error."""
        coordinator = await self.find_coordinator(group)
        described = await self.at_coordinator(group, lambda c: describe_groups(c, [group]),
                                               lambda r: r[0].error)
        if described[0].error:
            raise KafkaError(described[0].error)
        return described[0], coordinator

    async def committed(self, group: str) -> dict[TP, int]:
        """The group's committed offsets, every partition it has one for."""
        return {tp: o.offset for tp, o in (await self.committed_offsets(group)).items()}

    async def committed_offsets(self, group: str) -> dict[TP, CommittedOffset]:
        """The group's commits (offset, leader epoch, metadata), every partition it
        has one for; either kind of group (an admin's OffsetFetch: no member)."""
        fetched = await self.at_coordinator(group, lambda c: offset_fetch(c, group),
                                            lambda r: r.error)
        if fetched.error:
            raise KafkaError(fetched.error)
        return {tp: o for tp, o in fetched.partitions.items() if o.error == 0 and o.offset >= 0}

    async def commit(self, group: str, offsets: dict[TP, int]) -> dict[TP, int]:
        """A standalone OffsetCommit (no generation, no member); -> per-partition errors."""
        return await self.at_coordinator(
            group, lambda c: offset_commit(c, group, offsets),
            lambda r: next((e for e in r.values() if e), 0))

    async def delete_group(self, group: str) -> int:
        results = await self.at_coordinator(group, lambda c: delete_groups(c, [group]),
                                            lambda r: r.get(group, 0))
        return results.get(group, ErrorCode.UNKNOWN_SERVER_ERROR)

    async def delete_offsets(self, group: str, tps: list[TP]) -> tuple[int, dict[TP, int]]:
        """-> (group error, per-partition errors)."""
        return await self.at_coordinator(group, lambda c: offset_delete(c, group, tps),
                                         lambda r: r[0])

    async def partitions_of(self, topics: list[str]) -> list[TP]:
        """Every partition of ``topics``; KafkaError naming a topic that is missing."""
        cluster = await self.admin.metadata(topics)
        out: list[TP] = []
        for name in topics:
            t = cluster.topics.get(name)
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if t is None else t.error
            if code:
                raise KafkaError(code, f"topic '{name}': {ErrorCode.from_code(code).name}")
            assert t is not None
            out.extend((name, p) for p in sorted(t.partitions))
        return out

    async def list_offsets(self, tps: list[TP], timestamp: int) -> dict[TP, int | None]:
        """ListOffsets at each partition's leader; None where unknown (no leader,
        an error, or no offset for the timestamp)."""
        got = await self.admin.list_offsets(dict.fromkeys(tps, timestamp), min_version=1)
        out: dict[TP, int | None] = dict.fromkeys(tps)
        out.update({tp: a.offset for tp, a in got.items() if a.error == 0 and a.offset >= 0})
        return out


__all__ = ["RETRIABLE_COORDINATOR", "GroupAdmin"]
