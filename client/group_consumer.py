"""GroupConsumer: a member of a classic ("consumer" protocol type) consumer
group that reads the partitions the group gives it (Kafka's consumer with
``subscribe()``, eager rebalancing), for ``pybroker verifiable-consumer`` and
``pybroker consumer-perf-test``.

    c = GroupConsumer(admin, "g", ["t"], assignor="range", reset_to=EARLIEST,
                      on_assigned=..., on_revoked=...)
    for topic, partition, record in await c.poll(max_wait_ms=500): ...
    await c.commit()          # the positions (or given offsets), with the generation
    await c.close()           # LeaveGroup, so the others rebalance at once

Theory of operation:

1. The coordinator is found with FindCoordinator at any broker and spoken to
   over a connection of its own (a JoinGroup may wait there for the whole
   rebalance; fetches go to the leaders over the admin's pool).
2. Joining (``_rebalance``): with an assignment, first revoke it (eager:
   ``on_revoked``; committed first when auto-commit is on, which the
   coordinator accepts while it prepares the rebalance). Then JoinGroup
   offering one protocol (the assignor's name, the subscription v0 bytes of
   ``client.consumer_protocol``); MEMBER_ID_REQUIRED is answered by joining
   again with the id given (KIP-394), UNKNOWN_MEMBER_ID by joining afresh, a
   coordinator error by finding the coordinator again. The leader computes
   every member's partitions from the members' subscriptions and the topics'
   partition counts (Metadata) and sends them in its SyncGroup; the others
   send none. A SyncGroup answering REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION
   means join again.
3. Positions of the new partitions: the committed offset (OffsetFetch), else
   ``reset_to`` (EARLIEST / LATEST by ListOffsets; None: error, Kafka's "none").
   ``on_assigned`` is called, then reading goes on with one
   ``client.consumer.Consumer`` per topic (its Fetch, leader following and
   out-of-range reset).
4. A heartbeat task runs while the member is stable, every
   ``heartbeat_interval_ms``; REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
   UNKNOWN_MEMBER_ID or a lost coordinator flag a rejoin, which the next
   ``poll`` performs (so a member that stops polling is the one that gets
   dropped after its rebalance timeout, as in Kafka).
5. Commits (OffsetCommit with generation and member id) return per-partition
   errors; auto-commit (``auto_commit_interval_ms``) commits the positions
   from ``poll``, and on revoke and close.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.consumer import EARLIEST, READ_UNCOMMITTED, Consumer
from client.consumer_protocol import (RANGE, TP, assign, decode_assignment,
                                      decode_subscription, encode_assignment,
                                      encode_subscription)
from client.errors import ConsumerError, KafkaConnectionError
from client.groups import find_coordinator, heartbeat, join_group, leave_group, offset_commit, \
    offset_fetch, sync_group
from client.pool import BrokerPool
from protocol.errors import ErrorCode

PROTOCOL_TYPE = "consumer"
COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
REJOIN_ERRORS = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                           ErrorCode.UNKNOWN_MEMBER_ID})
RETRY_BACKOFF_S = 0.1
JOIN_DEADLINE_S = 120.0

GroupRecord = tuple[str, int, Any]          # (topic, partition, record)
Listener = Callable[[list[TP]], None]


class GroupConsumer:
    """One group member reading its assigned partitions; see the module docstring."""

    def __init__(self, admin: KafkaAdmin, group: str, topics: list[str], *,
                 assignor: str = RANGE, session_timeout_ms: int = 10000,
                 rebalance_timeout_ms: int = 30000, heartbeat_interval_ms: int = 3000,
                 reset_to: int | None = EARLIEST, isolation: int = READ_UNCOMMITTED,
                 auto_commit: bool = False, auto_commit_interval_ms: int = 5000,
                 on_assigned: Listener | None = None,
                 on_revoked: Listener | None = None) -> None:
        self.admin = admin
        self.group = group
        self.topics = list(topics)
        self.assignor = assignor
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval = min(heartbeat_interval_ms, session_timeout_ms // 3) / 1000
        self.reset_to = reset_to
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval_ms / 1000
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.member_id = ""
        self.generation = -1
        self.assignment: list[TP] = []
        self.rebalance_time_ms = 0          # summed time spent without an assignment
        self._consumers = {t: Consumer(admin, t, isolation=isolation,
                                       reset_to=EARLIEST if reset_to is None else reset_to)
                           for t in self.topics}
        self._pool = BrokerPool(client_id=admin.pool.client_id, security=admin.pool.security,
                                timeout=max(admin.pool.timeout, rebalance_timeout_ms / 1000 + 5))
        self._coordinator_conn: KafkaConnection | None = None
        self._rejoin = True
        self._stable = False
        self._closed = False
        self._heartbeats: asyncio.Task[None] | None = None
        self._last_auto_commit = time.monotonic()

    # -- the coordinator --------------------------------------------------------------

    async def _coordinator(self) -> KafkaConnection:
        if self._coordinator_conn is not None and not self._coordinator_conn.closed:
            return self._coordinator_conn
        deadline = time.monotonic() + JOIN_DEADLINE_S
        while True:
            c = await find_coordinator(await self.admin.any_connection(), self.group)
            if c.error == ErrorCode.NONE:
                self._coordinator_conn = await self._pool.get(c.host, c.port)
                return self._coordinator_conn
            err = ErrorCode.from_code(c.error)
            if not err.retriable or time.monotonic() > deadline:
                raise ConsumerError(f"FindCoordinator for group {self.group}: {err.name}: "
                                    f"{c.message or err.message}")
            await asyncio.sleep(RETRY_BACKOFF_S)

    def _lost_coordinator(self) -> None:
        self._coordinator_conn = None
        self._rejoin = True

    # -- joining ---------------------------------------------------------------------

    async def _rebalance(self) -> None:
        started = time.monotonic()
        self._stable = False
        if self.assignment:
            if self.auto_commit:
                await self._commit_quietly()
            revoked, self.assignment = self.assignment, []
            for c in self._consumers.values():
                c.positions.clear()
            if self.on_revoked:
                self.on_revoked(revoked)
        deadline = time.monotonic() + JOIN_DEADLINE_S
        while not await self._join_and_sync():
            if time.monotonic() > deadline:
                raise ConsumerError(f"could not join group {self.group} in {JOIN_DEADLINE_S} s")
            await asyncio.sleep(RETRY_BACKOFF_S)
        await self._set_positions()
        self._rejoin = False
        self._stable = True
        self.rebalance_time_ms += int((time.monotonic() - started) * 1000)
        if self._heartbeats is None or self._heartbeats.done():
            self._heartbeats = asyncio.create_task(self._heartbeat_loop())
        if self.on_assigned:
            self.on_assigned(list(self.assignment))

    async def _join_and_sync(self) -> bool:
        """One JoinGroup + SyncGroup round; True when it ended with an assignment."""
        try:
            conn = await self._coordinator()
            joined = await join_group(
                conn, self.group, member_id=self.member_id, protocol_type=PROTOCOL_TYPE,
                protocols=[(self.assignor, encode_subscription(self.topics))],
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms)
            if joined.error == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = joined.member_id
                return False
            if not self._usable(joined.error, "JoinGroup"):
                return False
            self.member_id, self.generation = joined.member_id, joined.generation_id
            payload = None
            if joined.is_leader:
                payload = await self._leader_assignments(joined.protocol_name or self.assignor,
                                                         joined.members)
            error, data = await sync_group(
                conn, self.group, generation_id=self.generation, member_id=self.member_id,
                assignments=payload, protocol_type=PROTOCOL_TYPE,
                protocol_name=joined.protocol_name)
        except KafkaConnectionError:
            self._lost_coordinator()
            return False
        if not self._usable(error, "SyncGroup"):
            return False
        try:
            mine = decode_assignment(data)
        except ValueError as e:
            raise ConsumerError(f"group {self.group}: the leader's assignment: {e}") from None
        self.assignment = sorted(tp for tp in mine if tp[0] in self._consumers)
        return True

    def _usable(self, error: int, what: str) -> bool:
        """True for NONE; False (after resetting what must be) for errors that mean
        'join again'; ConsumerError for the others."""
        if error == ErrorCode.NONE:
            return True
        if error in COORDINATOR_ERRORS:
            self._coordinator_conn = None
            return False
        if error == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return False
        if error in REJOIN_ERRORS:
            return False
        err = ErrorCode.from_code(error)
        raise ConsumerError(f"{what} for group {self.group}: {err.name}: {err.message}")

    async def _leader_assignments(self, protocol: str, members: Any) -> dict[str, bytes]:
        subscriptions = {}
        for m in members:
            try:
                subscriptions[m.member_id] = decode_subscription(m.metadata)
            except ValueError:
                subscriptions[m.member_id] = []      # a member we cannot read gets nothing
        wanted = sorted({t for ts in subscriptions.values() for t in ts})
        cluster = await self.admin.metadata(wanted)
        counts = {t: len(info.partitions) for t, info in cluster.topics.items()
                  if info.error == ErrorCode.NONE}
        plan = assign(protocol, subscriptions, counts)
        return {m: encode_assignment(tps) for m, tps in plan.items()}

    async def _set_positions(self) -> None:
        if not self.assignment:
            return
        deadline = time.monotonic() + JOIN_DEADLINE_S
        while True:     # a loading or moving coordinator, or commits still pending: again
            committed = await offset_fetch(await self._coordinator(), self.group,
                                           self.assignment)
            errors = {committed.error} | {c.error for c in committed.partitions.values()}
            if not errors & (COORDINATOR_ERRORS | {ErrorCode.UNSTABLE_OFFSET_COMMIT}) \
                    or time.monotonic() > deadline:
                break
            if errors & COORDINATOR_ERRORS:
                self._coordinator_conn = None
            await asyncio.sleep(RETRY_BACKOFF_S)
        missing: dict[str, list[int]] = {}
        for topic, p in self.assignment:
            got = committed.partitions.get((topic, p))
            if got is not None and got.error == ErrorCode.NONE and got.offset >= 0:
                self._consumers[topic].positions[p] = got.offset
            else:
                missing.setdefault(topic, []).append(p)
        for topic, parts in missing.items():
            if self.reset_to is None:
                raise ConsumerError(f"no committed offset for {topic} partitions {parts} of "
                                    f"group {self.group} and the reset policy is none")
            await self._consumers[topic].seek(parts, self.reset_to)
        for topic in {t for t, _ in self.assignment}:
            await self._consumers[topic].refresh()

    # -- the stable member -----------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.heartbeat_interval)
            if not self._stable or self._rejoin:
                continue
            try:
                error = await heartbeat(await self._coordinator(), self.group,
                                        generation_id=self.generation, member_id=self.member_id)
            except (KafkaConnectionError, ConsumerError):
                self._lost_coordinator()
                continue
            if error == ErrorCode.NONE:
                continue
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            elif error in COORDINATOR_ERRORS:
                self._coordinator_conn = None
            self._rejoin = True

    async def poll(self, max_wait_ms: int) -> list[GroupRecord]:
        """Rejoin when needed, then one Fetch round -> [(topic, partition, record)]."""
        if self._rejoin:
            await self._rebalance()
        if self.auto_commit and time.monotonic() - self._last_auto_commit >= \
                self.auto_commit_interval:
            await self._commit_quietly()
        active = [c for c in self._consumers.values() if c.positions]
        if not active:
            await asyncio.sleep(max_wait_ms / 1000)
            return []
        chunks = await asyncio.gather(*(c.poll(max_wait_ms) for c in active))
        return [(c.topic, p, rec) for c, chunk in zip(active, chunks) for p, rec, _ in chunk]

    def positions(self) -> dict[TP, int]:
        return {(t, p): o for t, c in self._consumers.items() for p, o in c.positions.items()}

    async def commit(self, offsets: Mapping[TP, int] | None = None) -> dict[TP, int]:
        """OffsetCommit of ``offsets`` (default: the positions) with this member's
        generation -> per-partition errors (REBALANCE_IN_PROGRESS and the like
        also flag a rejoin)."""
        wanted = dict(self.positions() if offsets is None else offsets)
        if not wanted:
            return {}
        try:
            errors = await offset_commit(await self._coordinator(), self.group, wanted,
                                         generation_id=self.generation, member_id=self.member_id)
        except KafkaConnectionError:
            self._lost_coordinator()
            return {tp: int(ErrorCode.COORDINATOR_NOT_AVAILABLE) for tp in wanted}
        if any(e in REJOIN_ERRORS or e in COORDINATOR_ERRORS for e in errors.values()):
            if any(e in COORDINATOR_ERRORS for e in errors.values()):
                self._coordinator_conn = None
            self._rejoin = True
        return errors

    async def _commit_quietly(self) -> None:
        self._last_auto_commit = time.monotonic()
        await self.commit()

    async def close(self) -> None:
        """Commit (auto-commit), stop heartbeating, leave the group, close connections."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.auto_commit and self._stable:
                await self._commit_quietly()
            if self._heartbeats is not None:
                self._heartbeats.cancel()
            if self.member_id and self._coordinator_conn is not None:
                await leave_group(self._coordinator_conn, self.group, self.member_id)
        except (KafkaConnectionError, ConsumerError):
            pass
        finally:
            if self.assignment and self.on_revoked:
                self.on_revoked(list(self.assignment))
            self.assignment = []
            await self._pool.close()


__all__ = ["GroupConsumer", "GroupRecord"]
