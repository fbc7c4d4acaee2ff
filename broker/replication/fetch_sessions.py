"""The leader's fetch sessions (KIP-227; Kafka's FetchSessionCache): what a session
remembers of each partition, so an incremental Fetch names only what changed and its
answer only the partitions with news (``CachedPartition.must_respond``). One cache per
broker (``Broker.fetch_sessions``), used by the Fetch handler (broker/handlers/fetch.py);
session ids and epochs are protocol/fetch_session.py's.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from broker.replication.fetch_reads import FetchPartitionRequest, FetchPartitionResult
from protocol.fetch_session import INT32_MAX

TP = tuple[str, int]


@dataclass(slots=True)
class CachedPartition:
    topic_id: uuid.UUID
    request: FetchPartitionRequest
    high_watermark: int = -1
    log_start_offset: int = -1
    # the partition's change_seq when a read last found the fetcher caught up (-1:
    # not known to be); ReplicaManager.fetch skips the partition while it holds
    caught_up_seq: int = -1

    def must_respond(self, r: FetchPartitionResult) -> bool:
        """Kafka ``maybeUpdateResponseData``: whether ``r`` goes in an incremental answer
        (updating what the session remembers)."""
        self.caught_up_seq = r.caught_up_seq
        respond = r.size > 0 or r.diverging_epoch is not None
        if self.high_watermark != r.high_watermark:
            respond, self.high_watermark = True, r.high_watermark
        if self.log_start_offset != r.log_start_offset:
            respond, self.log_start_offset = True, r.log_start_offset
        if r.error:
            respond, self.high_watermark = True, -1
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    uses_topic_ids: bool
    epoch: int = 1
    partitions: dict[TP, CachedPartition] = field(default_factory=dict)  # ordered
    last_used_ms: int = 0


class FetchSessionCache:
    """Sessions by id; full at ``max_entries`` unless one idle past ``eviction_ms`` can go."""

    def __init__(self, max_entries: int = 1000, eviction_ms: int = 120_000) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def create(self, now_ms: int, uses_topic_ids: bool) -> FetchSession | None:
        if len(self.sessions) >= self.max_entries and not self._evict_one(now_ms):
            return None
        while True:
            session_id = random.randint(1, INT32_MAX)
            if session_id not in self.sessions:
                break
        session = FetchSession(session_id, uses_topic_ids, last_used_ms=now_ms)
        self.sessions[session_id] = session
        return session

    def _evict_one(self, now_ms: int) -> bool:
        oldest = min(self.sessions.values(), key=lambda s: s.last_used_ms, default=None)
        if oldest is None or now_ms - oldest.last_used_ms < self.eviction_ms:
            return False
        del self.sessions[oldest.id]
        return True
