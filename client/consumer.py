"""Consumer: read partitions of one topic from their leaders, without a group
(Kafka's consumer with ``assign()``): positions by ListOffsets or given
offsets, then Fetch from each leader, following leadership as it moves.

    consumer = Consumer(admin, "t", isolation=READ_COMMITTED, reset_to=EARLIEST)
    await consumer.refresh()                 # metadata: every partition has a leader
    await consumer.seek([0, 1], EARLIEST)    # or LATEST, or an offset
    for partition, record, timestamp_type in await consumer.poll(max_wait_ms=500): ...

Behaviour, as Kafka's fetcher: one Fetch per leader per poll (concurrently);
OFFSET_OUT_OF_RANGE resets the partition to ``reset_to``; leader errors
(NOT_LEADER_OR_FOLLOWER and the like) and a lost connection refresh the
metadata and the next poll goes to the new leader; a partition whose next
batch is larger than its fetch size gets its size doubled (KIP-74 would return
the batch anyway; this also serves brokers before it). Under read_committed,
control batches and aborted transactions' batches are skipped
(``visible_records``). Errors that cannot be recovered raise ``ConsumerError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from client.admin import KafkaAdmin
from client.errors import ConsumerError, KafkaConnectionError
from client.metadata import ClusterMetadata
from client.verbs import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, FetchedPartition, FetchPosition,
                          fetch)
from protocol import legacy_records, records
from protocol.errors import ErrorCode

EARLIEST, LATEST = EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
REFRESH_ERRORS = frozenset({
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.OFFSET_NOT_AVAILABLE})
PARTITION_MAX_BYTES = 1024 * 1024
FETCH_MAX_BYTES = 50 * 1024 * 1024
LOST_LEADER_BACKOFF_S = 0.2

Polled = tuple[int, Any, int]      # (partition, record, timestamp type)


def visible_records(data: Any, position: int, read_committed: bool,
                    aborted: list[tuple[int, int]]) -> Iterator[tuple[int, Any, int]]:
    """(next position, record, timestamp type) for each record at or after
    ``position`` in a fetched records buffer. Control batches and, under
    read_committed, batches of aborted transactions are skipped (``aborted``
    = (producer id, first offset) from the Fetch response; a producer's
    abort marker ends its aborted range): they yield (next position, None, 0)
    so the position still moves past them."""
    buf = memoryview(data)
    if len(buf) > records.MAGIC_AT and buf[records.MAGIC_AT] < 2:
        for m in legacy_records.iter_records(buf, allow_partial=True):
            if m.offset >= position:
                yield m.offset + 1, m, m.timestamp_type or 0
        return
    open_aborts: dict[int, int] = {}
    pending = sorted(aborted, key=lambda a: a[1])
    for at, header in records.iter_batches(buf):
        while pending and pending[0][1] <= header.last_offset:
            pid, first = pending.pop(0)
            open_aborts[pid] = first
        nxt = header.next_offset
        if header.is_control:
            if header.producer_id in open_aborts:
                del open_aborts[header.producer_id]
            yield nxt, None, 0
            continue
        if read_committed and header.is_transactional and header.producer_id in open_aborts:
            yield nxt, None, 0
            continue
        for rec in records.iter_records(buf, at):
            if rec.offset >= position:
                yield rec.offset + 1, rec, header.timestamp_type
        yield nxt, None, 0


class Consumer:
    """Positions per partition of one topic, advanced by Fetch from each leader."""

    def __init__(self, admin: KafkaAdmin, topic: str, *, isolation: int = READ_UNCOMMITTED,
                 reset_to: int = LATEST) -> None:
        self.admin = admin
        self.topic = topic
        self.isolation = isolation
        self.reset_to = reset_to
        self.cluster: ClusterMetadata | None = None
        self.positions: dict[int, int] = {}
        self.max_bytes: dict[int, int] = {}

    async def refresh(self, attempts: int = 20) -> ClusterMetadata:
        """Metadata until the topic exists and every partition has a leader."""
        for attempt in range(attempts):
            cluster = await self.admin.metadata([self.topic])
            t = cluster.topics.get(self.topic)
            if t is not None and t.error == ErrorCode.NONE and t.partitions and all(
                    cluster.leader(self.topic, p) for p in t.partitions):
                self.cluster = cluster
                return cluster
            await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
        raise ConsumerError(f"Topic '{self.topic}' does not exist or has partitions without "
                            "a leader")

    def _by_leader(self, partitions: list[int]) -> dict[int, list[int]]:
        assert self.cluster is not None
        out: dict[int, list[int]] = {}
        for p in partitions:
            leader = self.cluster.leader(self.topic, p)
            if leader is None:
                raise ConsumerError(f"partition {p} of {self.topic} has no leader")
            out.setdefault(leader.node_id, []).append(p)
        return out

    async def seek(self, partitions: list[int], where: int) -> None:
        """Positions at ``where``: an offset, EARLIEST or LATEST (ListOffsets)."""
        if where >= 0:
            self.positions.update({p: where for p in partitions})
            return
        listed = await self.admin.list_offsets({(self.topic, p): where for p in partitions},
                                               isolation_level=self.isolation)
        for (_, p), answer in sorted(listed.items()):
            if answer.error != ErrorCode.NONE:
                err = ErrorCode.from_code(answer.error)
                raise ConsumerError(f"ListOffsets for {self.topic}-{p}: {err.name}: "
                                    f"{err.message}")
            self.positions[p] = answer.offset

    async def poll(self, max_wait_ms: int) -> list[Polled]:
        """One Fetch per leader (concurrently) -> [(partition, record, ts type)]."""
        assert self.cluster is not None
        groups = self._by_leader(sorted(self.positions))
        results = await asyncio.gather(*(self._fetch(n, ps, max_wait_ms)
                                         for n, ps in groups.items()), return_exceptions=True)
        lost = False
        out: list[Polled] = []
        for chunk in results:
            if isinstance(chunk, KafkaConnectionError):
                lost = True  # a leader went away: find the new one, as a consumer does
            elif isinstance(chunk, BaseException):
                raise chunk
            else:
                out.extend(chunk)
        if lost:
            await asyncio.sleep(LOST_LEADER_BACKOFF_S)
            await self.refresh()
        return out

    async def _fetch(self, node_id: int, parts: list[int], max_wait_ms: int) -> list[Polled]:
        conn = await self.admin.broker_connection(node_id)
        resp = await fetch(conn, {
            (self.topic, p): FetchPosition(self.positions[p],
                                           self.max_bytes.get(p, PARTITION_MAX_BYTES))
            for p in parts}, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=FETCH_MAX_BYTES,
            isolation_level=self.isolation)
        if resp.error:
            err = ErrorCode.from_code(resp.error)
            raise ConsumerError(f"Fetch from broker {node_id}: {err.name}: {err.message}")
        out: list[Polled] = []
        for (_, p), fetched in resp.partitions.items():
            out.extend(await self._partition_data(p, fetched))
        return out

    async def _partition_data(self, p: int, fetched: FetchedPartition) -> list[Polled]:
        err = ErrorCode.from_code(fetched.error)
        if err is ErrorCode.OFFSET_OUT_OF_RANGE:
            await self.seek([p], self.reset_to)
            return []
        if err in REFRESH_ERRORS:
            await self.refresh()
            return []
        if err is not ErrorCode.NONE:
            raise ConsumerError(f"Fetch {self.topic}-{p}: {err.name}: {err.message}")
        if len(fetched.records) == 0 or p not in self.positions:
            return []
        out: list[Polled] = []
        start = self.positions[p]
        for nxt, rec, ts_type in visible_records(fetched.records, start,
                                                 self.isolation == READ_COMMITTED,
                                                 list(fetched.aborted)):
            self.positions[p] = max(self.positions[p], nxt)
            if rec is not None:
                out.append((p, rec, ts_type))
        if self.positions[p] == start:  # only a partial batch: it is bigger than we asked
            self.max_bytes[p] = self.max_bytes.get(p, PARTITION_MAX_BYTES) * 2
        return out


__all__ = ["EARLIEST", "LATEST", "READ_COMMITTED", "READ_UNCOMMITTED", "REFRESH_ERRORS",
           "Consumer", "Polled", "visible_records"]
