"""The console's cluster reads: Kafka requests through ``client/`` only, turned
into the dataclasses of model.py. One ``ClusterReader`` per console process;
its ``GroupAdmin`` owns the ``KafkaAdmin`` (one connection pool) every read uses.

Where each fact comes from:

* brokers, controller, topics, partitions, leaders, replicas, ISR: Metadata
  (fresh on every page: a page shows the cluster as it is now);
* a broker's ZooKeeper session state and uptime: the why facts' BrokerStatus;
  its log dirs (online or not, size, free space): DescribeLogDirs, which also
  gives each replica's size on disk (partition page);
* log start / high watermark: ListOffsets EARLIEST / LATEST at the leader
  (a consumer's view); the leader's LEO: ListOffsets LATEST with the
  debugging replica id -2 (Kafka answers the LEO to a non-consumer replica id);
  each replica's LEO: the leader's view in the why facts (PartitionWhy.replicas);
* groups, members, assignments: ListGroups (with each group's type) and
  ConsumerGroupDescribe (KIP-848 groups: epochs, current and target
  assignments) or DescribeGroups (classic groups) at coordinators;
  committed offsets: OffsetFetch; lag = HW - committed;
* messages: Fetch (read_uncommitted, control batches skipped) from the leader,
  starting at an offset or at ListOffsets(timestamp).

Requests to several brokers or partitions run concurrently; each broker's is
bounded in time, so one dead broker makes its cells "unknown", not the page
slow.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from client.admin import KafkaAdmin
from client.consumer import visible_records
from client.group_admin import GroupAdmin
from client.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from client.operator_admin import LogDirInfo, describe_log_dirs
from client.security import ClientSecurity
from client.verbs import (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, TP, FetchPosition, ListedOffset,
                          fetch, list_offsets)
from protocol.why_model import PartitionWhy
from protocol.errors import ErrorCode, KafkaError
from tools.console.model import (BrokerRow, BrowseQuery, BrowseView, GroupSummary, GroupView,
                                 MemberRow, Message, OffsetRow, Overview, PartitionRow,
                                 PartitionView, TopicSummary, TopicView)
from tools.console.why_source import ClientWhySource, WhyAnswer, WhySource

T = TypeVar("T")
DEBUG_REPLICA_ID = -2            # ListOffsets from a non-consumer: LATEST is the LEO
BROKER_TIMEOUT_S = 5.0
WHY_PER_TOPIC_MAX = 64           # topic page: why facts fetched for at most this many
FETCH_PARTITION_BYTES = 1024 * 1024
MAX_BROWSE = 500


class NotFound(Exception):
    """The page's subject does not exist (404)."""


def now_ms() -> int:
    return int(time.time() * 1000)


def _or_minus_one(offset: int | None) -> int:
    """An offset a lookup may not have found (-1, as Kafka's tools print it)."""
    return -1 if offset is None else offset


def error_name(code: int) -> str:
    try:
        return ErrorCode.from_code(code).name
    except (ValueError, KeyError):
        return f"error {code}"


def describe_failure(e: BaseException) -> str:
    """One line for a failed read: "TimeoutError: ..." / the Kafka error's name."""
    if isinstance(e, asyncio.TimeoutError):
        return "no answer in time"
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


async def bounded(aw: Awaitable[T], timeout_s: float = BROKER_TIMEOUT_S) -> T:
    return await asyncio.wait_for(aw, timeout_s)


class ClusterReader:
    """Every read a page needs; see the module docstring."""

    def __init__(self, servers: str, *, timeout_ms: int = 10000,
                 security: ClientSecurity | None = None, why: WhySource | None = None) -> None:
        self.groups_admin = GroupAdmin(servers, timeout_ms, security=security)
        self.admin: KafkaAdmin = self.groups_admin.admin
        self.why: WhySource = why or ClientWhySource(self.admin)

    async def close(self) -> None:
        await self.groups_admin.close()

    # -- cluster and topics ----------------------------------------------------------------

    async def overview(self) -> Overview:
        cluster = await self.admin.metadata(None)
        ids = sorted(cluster.brokers)
        statuses, dirs = await asyncio.gather(
            asyncio.gather(*(self.why.broker(b) for b in ids)),
            asyncio.gather(*(self._log_dirs(b, None) for b in ids), return_exceptions=True))
        brokers = []
        for b, status, answer in zip(ids, statuses, dirs):
            info = cluster.brokers[b]
            if isinstance(answer, BaseException):
                brokers.append(BrokerRow(b, info.host, info.port, info.rack, status, (),
                                         describe_failure(answer)))
            else:
                brokers.append(BrokerRow(b, info.host, info.port, info.rack, status,
                                         tuple(answer)))
        parts = [p for t in cluster.topics.values() for p in t.partitions.values()]
        return Overview(cluster.cluster_id, cluster.controller_id, brokers, len(cluster.topics),
                        len(parts), sum(len(p.isr) < len(p.replicas) for p in parts),
                        sum(p.leader < 0 for p in parts))

    async def topics(self) -> list[TopicSummary]:
        cluster = await self.admin.metadata(None)
        out = []
        for name in sorted(cluster.topics):
            t = cluster.topics[name]
            parts = list(t.partitions.values())
            out.append(TopicSummary(
                name, t.is_internal, error_name(t.error) if t.error else "", len(parts),
                max((len(p.replicas) for p in parts), default=0),
                sum(len(p.isr) < len(p.replicas) for p in parts), sum(p.leader < 0 for p in parts)))
        return out

    async def _topic_info(self, topic: str) -> tuple[ClusterMetadata, TopicInfo]:
        cluster = await self.admin.metadata([topic])
        t = cluster.topics.get(topic)
        if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise NotFound(f"topic {topic!r} does not exist")
        return cluster, t

    async def topic(self, topic: str) -> TopicView:
        cluster, t = await self._topic_info(topic)
        infos = [t.partitions[p] for p in sorted(t.partitions)]
        offsets = await self._leader_offsets(cluster, topic, infos)
        whys: list[WhyAnswer[PartitionWhy]] = []
        note = ""
        if len(infos) <= WHY_PER_TOPIC_MAX:
            whys = list(await asyncio.gather(*(self.why.partition(topic, p.partition)
                                                for p in infos)))
            missing = {w.unavailable for w in whys if w.value is None}
            note = "; ".join(sorted(missing))
        else:
            note = (f"per-replica LEOs are shown on each partition's page (the topic has more "
                    f"than {WHY_PER_TOPIC_MAX} partitions)")
        rows = [self._row(p, offsets.get(p.partition), whys[i] if whys else None)
                for i, p in enumerate(infos)]
        return TopicView(topic, t.is_internal, error_name(t.error) if t.error else "", rows,
                         note)

    async def partition(self, topic: str, partition: int) -> PartitionView:
        cluster, t = await self._topic_info(topic)
        info = t.partitions.get(partition)
        if info is None:
            raise NotFound(f"partition {partition} of topic {topic!r} does not exist")
        offsets, why, sizes = await asyncio.gather(
            self._leader_offsets(cluster, topic, [info]), self.why.partition(topic, partition),
            asyncio.gather(*(self._log_dirs(r, {topic: [partition]}) for r in info.replicas),
                           return_exceptions=True))
        replica_bytes = {}
        for broker, answer in zip(info.replicas, sizes):
            if not isinstance(answer, BaseException):
                found = [d.replicas[(topic, partition)] for d in answer
                         if (topic, partition) in d.replicas]
                if found:
                    replica_bytes[broker] = sum(r.size for r in found if not r.is_future)
        return PartitionView(topic, self._row(info, offsets.get(partition), why), why, now_ms(),
                             replica_bytes)

    async def _log_dirs(self, broker: int, topics: dict[str, list[int]] | None
                        ) -> list[LogDirInfo]:
        return await bounded(describe_log_dirs(
            await bounded(self.admin.broker_connection(broker)), topics))

    @staticmethod
    def _row(p: PartitionInfo, offsets: tuple[int, int, int] | None,
             why: WhyAnswer[PartitionWhy] | None) -> PartitionRow:
        start, hw, leo = offsets or (-1, -1, -1)
        replica_leo: dict[int, int] = {}
        w = why.value if why is not None else None
        if w is not None:
            replica_leo = {r.broker_id: r.log_end_offset for r in w.replicas}
            hw = w.high_watermark if w.high_watermark >= 0 else hw
            leo = w.log_end_offset if w.log_end_offset >= 0 else leo
        return PartitionRow(p.partition, p.leader, p.leader_epoch, p.replicas, p.isr,
                            p.offline_replicas, start, hw, leo, replica_leo,
                            error_name(p.error) if p.error else "")

    async def _leader_offsets(self, cluster: ClusterMetadata, topic: str,
                              infos: Iterable[PartitionInfo]) -> dict[int, tuple[int, int, int]]:
        """partition -> (log start, HW, leader LEO), from each leader; leaders that do
        not answer in time leave their partitions out."""
        by_leader: dict[int, list[int]] = {}
        for p in infos:
            if p.leader >= 0:
                by_leader.setdefault(p.leader, []).append(p.partition)

        async def one(leader: int, parts: list[int]) -> dict[int, tuple[int, int, int]]:
            conn = await bounded(self.admin.broker_connection(leader))
            earliest, latest, leo = await bounded(asyncio.gather(
                list_offsets(conn, {(topic, p): EARLIEST_TIMESTAMP for p in parts}),
                list_offsets(conn, {(topic, p): LATEST_TIMESTAMP for p in parts}),
                list_offsets(conn, {(topic, p): LATEST_TIMESTAMP for p in parts},
                             replica_id=DEBUG_REPLICA_ID)))
            def offset(found: dict[TP, ListedOffset], tp: TP) -> int:
                return found[tp].offset if tp in found and found[tp].error == 0 else -1
            return {p: (offset(earliest, (topic, p)), offset(latest, (topic, p)),
                        offset(leo, (topic, p))) for p in parts}

        results = await asyncio.gather(*(one(n, ps) for n, ps in by_leader.items()),
                                       return_exceptions=True)
        merged: dict[int, tuple[int, int, int]] = {}
        for r in results:
            if isinstance(r, dict):
                merged.update(r)
        return merged

    # -- groups ----------------------------------------------------------------------------

    async def groups(self) -> list[GroupSummary]:
        return [GroupSummary(g.group_id, g.state, g.type_name if g.group_type else "")
                for g in await self.groups_admin.list_group_listings(set())]

    async def group(self, group_id: str) -> GroupView:
        try:
            described, coordinator = await self.groups_admin.describe_group(group_id)
        except KafkaError as e:
            if e.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise NotFound(f"group {group_id!r} does not exist") from None
            raise
        if described.state == "Dead":
            raise NotFound(f"group {group_id!r} does not exist")
        committed, why = await asyncio.gather(self.groups_admin.committed(group_id),
                                              self.why.group(group_id))
        members = [MemberRow(m.member_id, m.instance_id, m.client_id, m.host, m.assignment,
                             m.member_epoch, m.target_assignment, m.upgraded)
                   for m in described.members]
        owner = {tp: m.client_id for m in members for tp in m.assignment}
        tps = sorted(set(committed) | set(owner))
        ends = await self.groups_admin.list_offsets(tps, LATEST_TIMESTAMP) if tps else {}
        offsets = [OffsetRow(t, p, committed.get((t, p), -1), _or_minus_one(ends.get((t, p))),
                             owner.get((t, p), "-")) for t, p in tps]
        return GroupView(group_id, described.state, described.protocol_type,
                         described.assignor, coordinator, members, offsets, why, now_ms(),
                         described.group_type, described.group_epoch,
                         described.assignment_epoch)

    # -- messages --------------------------------------------------------------------------

    async def browse(self, q: BrowseQuery) -> BrowseView:
        cluster, t = await self._topic_info(q.topic)
        info = t.partitions.get(q.partition)
        if info is None:
            raise NotFound(f"partition {q.partition} of topic {q.topic!r} does not exist")
        if info.leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE,
                             f"{q.topic}-{q.partition} has no leader")
        start_log, hw, _ = (await self._leader_offsets(cluster, q.topic, [info])).get(
            q.partition, (-1, -1, -1))
        count = max(1, min(q.count, MAX_BROWSE))
        note = ""
        if q.timestamp_ms is not None:
            found = await self.admin.list_offsets({(q.topic, q.partition): q.timestamp_ms},
                                                  min_version=1)
            answer = found.get((q.topic, q.partition))
            if answer is None or answer.error:
                raise KafkaError(answer.error if answer else ErrorCode.UNKNOWN_SERVER_ERROR,
                                 "ListOffsets by timestamp failed")
            if answer.offset < 0:
                return BrowseView(q, -1, hw, start_log, [],
                                  "no message at or after that time")
            start = answer.offset
            note = f"first offset at or after the timestamp: {start}"
        elif q.offset is not None:
            start = q.offset
            if 0 <= start < start_log:
                note = f"offset {start} is before the log start {start_log}; from there instead"
                start = start_log
            elif 0 <= hw < start:
                note = f"offset {start} is beyond the high watermark {hw}"
        else:
            start = max(start_log if start_log >= 0 else 0, (hw if hw >= 0 else 0) - count)
        messages = await self._read(q.topic, q.partition, info.leader, start, count, hw)
        return BrowseView(q, start, hw, start_log, messages, note)

    async def _read(self, topic: str, partition: int, leader: int, start: int, count: int,
                    hw: int) -> list[Message]:
        tp: TP = (topic, partition)
        position = start
        out: list[Message] = []
        max_bytes = FETCH_PARTITION_BYTES
        for _ in range(8):                      # a few fetches at most per page
            if len(out) >= count or (0 <= hw <= position):
                break
            conn = await bounded(self.admin.broker_connection(leader))
            resp = await bounded(fetch(conn, {tp: FetchPosition(position, max_bytes)},
                                       max_wait_ms=0, min_bytes=0, max_bytes=max_bytes))
            got = resp.partitions.get(tp)
            if got is None:
                break
            if got.error == ErrorCode.OFFSET_OUT_OF_RANGE:
                break                           # retention moved the log start meanwhile
            if got.error:
                raise KafkaError(got.error, f"Fetch {topic}-{partition} at offset {position}: "
                                 f"{error_name(got.error)}")
            if len(got.records) == 0:
                break
            before = position
            for nxt, rec, _ in visible_records(got.records, position, False, []):
                position = max(position, nxt)
                if rec is not None and len(out) < count:
                    out.append(Message(partition, rec.offset, rec.timestamp, rec.key, rec.value,
                                       list(getattr(rec, "headers", None) or [])))
            if position == before:
                max_bytes *= 2                  # one batch larger than we asked for
                if max_bytes > 64 * FETCH_PARTITION_BYTES:
                    break
        return out


__all__ = ["ClusterReader", "NotFound", "describe_failure", "error_name", "now_ms"]
