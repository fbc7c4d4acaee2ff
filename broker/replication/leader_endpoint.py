"""The follower's view of one leader broker (Kafka ``LeaderEndPoint``): the seam
between the fetcher's logic and the wire.

``LeaderEndpoint`` is the Protocol the fetcher uses; ``RemoteLeaderEndpoint``
speaks it over a dedicated ``client.KafkaConnection`` (its own socket,
so a long-polling replica Fetch never queues behind the controller's
requests), reconnecting after a drop. Tests use a fake (STYLE.md §12).

Requests, all with ReplicaId = our broker id:

* Fetch v12 (capped there: v12 is the first with LastFetchedEpoch, so the
  leader answers DivergingEpoch, and the last with topic names), max_wait /
  min_bytes from replica.fetch.wait.max.ms / replica.fetch.min.bytes, in an
  incremental fetch session (KIP-227, Kafka ``FetchSessionHandler``): the
  first request is full (SessionEpoch 0) and the leader answers a session
  id; after it each request names only the partitions whose fetch state
  changed (and forgets those no longer fetched), and the leader answers only
  partitions with records, a new HW or log start, or an error. With 1,000
  partitions on one leader a full request and answer per round trip cost
  tens of milliseconds in Python; an incremental one costs what changed.
  A session error, a new connection or a leader that made no session starts
  over with a full request.
* OffsetForLeaderEpoch (v3+ carries ReplicaId; v2+ CurrentLeaderEpoch).
* ListOffsets -2 / -1 (replica id set: the leader answers its log start / LEO).

The requests are built and read by the client's verbs (``client.verbs``:
``fetch``, ``offset_for_leader_epoch``, ``list_offsets``); the fetch session
state (which partitions the leader's session holds, its id and epoch) stays
here, and the answers are turned into this module's types, which the fetcher
and the tests' fakes speak.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from client import KafkaConnection, KafkaConnectionError, verbs
from client.security import ClientSecurity
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, SESSION_ERRORS, next_epoch

if TYPE_CHECKING:
    from broker.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
MAX_FETCH_VERSION = 12
EARLIEST_TIMESTAMP = verbs.EARLIEST_TIMESTAMP
LATEST_TIMESTAMP = verbs.LATEST_TIMESTAMP


# Built per request and never changed afterwards; not frozen=True, whose __init__
# sets each field through object.__setattr__ (5x the cost: 2 µs for 8 fields here).
@dataclass(slots=True)
class FetchRequestPartition:
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    max_bytes: int


# (not frozen: as above)
@dataclass(slots=True)
class FetchedPartition:
    error: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview = b""
    diverging_epoch: tuple[int, int] | None = None   # (epoch, end offset)


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    error: int
    leader_epoch: int = -1
    end_offset: int = -1


class LeaderEndpoint(Protocol):
    """One leader broker as a follower's fetcher sees it."""

    leader_id: int

    async def fetch(self, partitions: dict[TopicPartition, FetchRequestPartition]
                    ) -> dict[TopicPartition, FetchedPartition]: ...

    async def fetch_epoch_end_offsets(self, partitions: dict[TopicPartition, tuple[int, int]]
                                      ) -> dict[TopicPartition, EpochEndOffset]:
        """tp -> (current leader epoch, epoch asked about) -> the leader's answer."""
        ...

    async def fetch_earliest_offset(self, tp: TopicPartition, current_leader_epoch: int
                                    ) -> tuple[int, int]:
        """(error, the leader's log start offset)."""
        ...

    async def fetch_latest_offset(self, tp: TopicPartition, current_leader_epoch: int
                                  ) -> tuple[int, int]:
        """(error, the leader's log end offset)."""
        ...

    async def close(self) -> None: ...


class LeaderUnknown(KafkaConnectionError):
    """No address for the leader yet (its UpdateMetadata has not arrived)."""


# broker id -> (host, port) of its listener, or None while unknown
Resolver = Callable[[int], "tuple[str, int] | None"]


def metadata_resolver(metadata: MetadataCache) -> Resolver:
    """A Resolver over the MetadataCache (UpdateMetadata's live brokers)."""
    def resolve(broker_id: int) -> tuple[str, int] | None:
        b = metadata.broker(broker_id)
        return None if b is None or b.port < 0 else (b.host, b.port)
    return resolve


class RemoteLeaderEndpoint:
    """LeaderEndpoint over the Kafka protocol; see the module docstring.

    Raises KafkaConnectionError when the leader cannot be reached or is
    unknown; the fetcher backs off and retries (the connection is reopened).
    """

    def __init__(self, local_broker_id: int, leader_id: int, resolve: Resolver, *,
                 max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 10 * 1024 * 1024,
                 timeout: float = 30.0, security: ClientSecurity | None = None) -> None:
        self.local_broker_id = local_broker_id
        self.leader_id = leader_id
        self.resolve = resolve
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.security = security      # the inter-broker listener's TLS / SASL
        self._conn: KafkaConnection | None = None
        self._reset_session()

    def _reset_session(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.session_epoch = INITIAL_EPOCH
        # what the leader's session holds for each partition (as we last sent it)
        self._in_session: dict[TopicPartition, FetchRequestPartition] = {}

    async def _connection(self) -> KafkaConnection:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        address = self.resolve(self.leader_id)
        if address is None:
            raise LeaderUnknown(f"no address known for broker {self.leader_id}")
        self._conn = await KafkaConnection.open(
            address[0], address[1], client_id=f"broker-{self.local_broker_id}-fetcher",
            timeout=self.timeout, security=self.security)
        return self._conn

    async def close(self) -> None:
        self._reset_session()
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    # -- Fetch -------------------------------------------------------------------------

    async def fetch(self, partitions: dict[TopicPartition, FetchRequestPartition]
                    ) -> dict[TopicPartition, FetchedPartition]:
        """Answers for the partitions the leader answered: all of them on a full
        request, those with news on an incremental one (none after a session error,
        so the caller just asks again, now in full)."""
        conn = await self._connection()
        version = conn.version_for(ApiKey.FETCH, MAX_FETCH_VERSION)
        full = self.session_epoch == INITIAL_EPOCH or version < 7
        if full:
            send, forgotten = partitions, []
        else:
            in_session = self._in_session
            send = {tp: p for tp, p in partitions.items()
                    if (prev := in_session.get(tp)) is not p and prev != p}
            forgotten = [tp for tp in self._in_session if tp not in partitions]
        resp = await verbs.fetch(
            conn, {tp: verbs.FetchPosition(p.fetch_offset, p.max_bytes, p.current_leader_epoch,
                                           p.last_fetched_epoch, p.log_start_offset)
                   for tp, p in send.items()},
            max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
            isolation_level=0, replica_id=self.local_broker_id, session_id=self.session_id,
            session_epoch=self.session_epoch, forgotten=forgotten, rack_id="",
            request_timeout=self.timeout + self.max_wait_ms / 1000, max_version=MAX_FETCH_VERSION)
        out: dict[TopicPartition, FetchedPartition] = {}
        if resp.error:
            if resp.error in SESSION_ERRORS:
                log.info("fetch session %d with broker %d: %s; starting a new one",
                         self.session_id, self.leader_id, ErrorCode.from_code(resp.error).name)
                self.session_epoch = INITIAL_EPOCH   # closes it (if it exists) and opens anew
                self._in_session = {}
                return out
            return {tp: FetchedPartition(resp.error) for tp in partitions}
        self._session_answered(full, partitions, send, forgotten, resp.session_id)
        for tp, p in resp.partitions.items():
            out[tp] = FetchedPartition(p.error, p.high_watermark, p.log_start_offset, p.records,
                                       p.diverging_epoch)
        return out

    def _session_answered(self, full: bool, partitions: dict[TopicPartition, FetchRequestPartition],
                          sent: dict[TopicPartition, FetchRequestPartition],
                          forgotten: list[TopicPartition], session_id: int) -> None:
        """Kafka ``FetchSessionHandler.handleResponse`` for an answer without error."""
        if full:
            if session_id == INVALID_SESSION_ID:      # the leader keeps none: full requests again
                self.session_id, self._in_session = INVALID_SESSION_ID, {}
                return
            self.session_id, self.session_epoch = session_id, 1
            self._in_session = dict(partitions)
            return
        self.session_epoch = next_epoch(self.session_epoch)
        self._in_session.update(sent)
        for tp in forgotten:
            del self._in_session[tp]

    # -- OffsetForLeaderEpoch / ListOffsets ------------------------------------------------

    async def fetch_epoch_end_offsets(self, partitions: dict[TopicPartition, tuple[int, int]]
                                      ) -> dict[TopicPartition, EpochEndOffset]:
        conn = await self._connection()
        answers = await verbs.offset_for_leader_epoch(conn, partitions,
                                                      replica_id=self.local_broker_id)
        out = {tp: EpochEndOffset(ErrorCode.UNKNOWN_SERVER_ERROR) for tp in partitions}
        for tp, a in answers.items():
            out[tp] = EpochEndOffset(a.error, a.leader_epoch, a.end_offset)
        return out

    async def fetch_earliest_offset(self, tp: TopicPartition, current_leader_epoch: int
                                    ) -> tuple[int, int]:
        return await self._list_offset(tp, current_leader_epoch, EARLIEST_TIMESTAMP)

    async def fetch_latest_offset(self, tp: TopicPartition, current_leader_epoch: int
                                  ) -> tuple[int, int]:
        return await self._list_offset(tp, current_leader_epoch, LATEST_TIMESTAMP)

    async def _list_offset(self, tp: TopicPartition, current_leader_epoch: int,
                           timestamp: int) -> tuple[int, int]:
        conn = await self._connection()
        answers = await verbs.list_offsets(conn, {tp: timestamp}, isolation_level=0,
                                           replica_id=self.local_broker_id,
                                           current_leader_epochs={tp: current_leader_epoch})
        a = answers.get(tp)
        if a is None:
            return ErrorCode.UNKNOWN_SERVER_ERROR, -1
        return a.error, a.offset


def remote_endpoint_factory(local_broker_id: int, resolve: Resolver, **settings: Any
                            ) -> Callable[[int], LeaderEndpoint]:
    """leader id -> a new RemoteLeaderEndpoint (the fetcher manager's factory)."""
    def make(leader_id: int) -> LeaderEndpoint:
        return RemoteLeaderEndpoint(local_broker_id, leader_id, resolve, **settings)
    return make
