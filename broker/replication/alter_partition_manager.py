"""AlterPartitionManager: ISR changes from partition leaders to the active controller.

The leader never writes partition state itself (the controller is the single
writer of /brokers/topics/<t>/partitions/<p>/state); it proposes an ISR with
AlterPartition (API 56) and applies only the controller's answer.

Theory of operation (Kafka ``DefaultAlterPartitionManager``):

1. ``submit(partition, change, on_answer)`` queues one item per partition (a
   newer item for the same partition replaces an unsent older one) and wakes
   the sender task.
2. The sender sends everything queued as ONE AlterPartition request (one in
   flight at a time) to the controller that the metadata cache names,
   fenced by partition epoch: each entry carries the leader epoch and the
   partition epoch (ZooKeeper znode version) the proposal was based on, and
   the controller rejects a stale one (INVALID_UPDATE_VERSION,
   FENCED_LEADER_EPOCH) instead of overwriting a newer state.
3. Each partition's answer goes to its ``on_answer(error, leader_epoch, isr,
   partition_epoch)``, which applies it to the Partition
   (``Partition.on_alter_partition_answer``: fencing again on epochs).
4. Connection errors, a top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH,
   ...) and retriable partition errors requeue the items whose change is
   still pending, after ``backoff_ms``; the controller may have moved.
5. A controller we cannot reach (no connection, or no answer within
   ``controller_timeout``: a cut that drops packets leaves an open connection
   silent) is asked through a peer (``relays``: the other
   live brokers): the peer's AlterPartition handler forwards the request, one
   hop, to the controller it knows and hands back the answer
   (broker/handlers/alter_partition.py). The controller stays the only writer;
   what the relay adds is reach: a leader cut from the controller but not from
   ZooKeeper nor its followers (a bridge partition, a controller-cut) could not
   shrink its ISR, and every acks=all write to its partitions waited until the
   cut healed. Kafka's AlterPartition (2.7+) has that gap; its older ZooKeeper
   path, the leader writing the ISR itself, raced the controller. A request
   that reaches the controller twice (once late, once relayed) is harmless: an
   ISR already applied is answered as is, a stale one INVALID_UPDATE_VERSION
   (controller/alter_partition.py, rules 4-5).

Wire versions (the request is ``client.verbs.alter_partition``'s): v0-1 name
topics, v2+ use topic ids (used when every queued partition has one), v3 sends
ISR members with broker epochs (ours unknown for peers: -1). ``max_version``
caps what we use (default 2).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from client import KafkaConnectionError
from client.verbs import IsrProposal, alter_partition
from broker.tasks import cancel_and_wait
from broker.replication.partition import Partition
from broker.replication.partition_isr import FENCED_ERRORS, REVERT_ERRORS, PendingIsrChange
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.metadata_cache import MetadataCache

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
IsrAnswer = Callable[[int, int, tuple[int, ...], int], None]


class Pool(Protocol):
    """The part of client.BrokerPool we use (``get`` -> a client.KafkaConnection)."""

    async def get(self, host: str, port: int) -> Any: ...


# () -> (host, port) of the active controller, None while unknown
ControllerAddress = Callable[[], "tuple[str, int] | None"]
# () -> (host, port) of the brokers that may relay to it (point 5), in the order to try
RelayAddresses = Callable[[], "list[tuple[str, int]]"]


def metadata_controller(metadata: MetadataCache) -> ControllerAddress:
    """The controller the MetadataCache names (from LeaderAndIsr / UpdateMetadata)."""
    def address() -> tuple[str, int] | None:
        if metadata.controller_id is None or metadata.controller_id < 0:
            return None
        b = metadata.broker(metadata.controller_id)
        return None if b is None or b.port < 0 else (b.host, b.port)
    return address


def metadata_relays(metadata: MetadataCache, broker_id: int) -> RelayAddresses:
    """The live brokers the MetadataCache knows, but us and the controller."""
    def addresses() -> list[tuple[str, int]]:
        return [(b.host, b.port) for b in sorted(metadata.brokers(), key=lambda b: b.id)
                if b.id not in (broker_id, metadata.controller_id) and b.port >= 0]
    return addresses


@dataclass(slots=True)
class _Item:
    partition: Partition
    change: PendingIsrChange
    on_answer: IsrAnswer

    @property
    def wanted(self) -> bool:
        """Still the partition's pending change (not replaced by a LeaderAndIsr)."""
        return self.partition.pending_isr is self.change


class _Retry(Exception):
    pass


class AlterPartitionManager:
    def __init__(self, broker_id: int, broker_epoch: Callable[[], int], pool: Pool,
                 controller: ControllerAddress, *, relays: RelayAddresses = lambda: [],
                 backoff_ms: int = 500, max_version: int = 2, timeout: float = 30.0,
                 controller_timeout: float = 3.0) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.pool = pool
        self.controller = controller
        self.relays = relays
        self.backoff_ms = backoff_ms
        self.max_version = max_version
        self.timeout = timeout
        # the controller's time to answer before a peer is asked (point 5); a relay
        # gets twice that (its hop, then the controller's)
        self.controller_timeout = min(timeout, controller_timeout)
        self._unsent: dict[TopicPartition, _Item] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.requests_sent = 0
        self.requests_relayed = 0       # answered through a peer (point 5)

    # -- the ReplicaManager's seam ---------------------------------------------------------

    def submit(self, p: Partition, change: PendingIsrChange, on_answer: IsrAnswer) -> None:
        self._unsent[p.tp] = _Item(p, change, on_answer)
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(),
                                                                name="alter-partition")

    @property
    def pending(self) -> int:
        return len(self._unsent)

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    # -- the sender ----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._unsent:
                if not await self.send_once():
                    await asyncio.sleep(self.backoff_ms / 1000)

    async def send_once(self) -> bool:
        """Send everything queued as one request and dispatch the answers; False
        when (some of) it must be retried after the backoff."""
        batch = {tp: item for tp, item in self._unsent.items() if item.wanted}
        self._unsent.clear()
        if not batch:
            return True
        try:
            answers = await self._send(batch)
        except (KafkaConnectionError, OSError, asyncio.TimeoutError, _Retry) as e:
            log.warning("AlterPartition for %d partitions failed: %s; retrying in %d ms",
                        len(batch), e, self.backoff_ms)
            self._requeue(batch.values())
            return False
        retry = []
        for tp, item in batch.items():
            answer = answers.get(tp)
            if answer is None or _retriable(answer[0]):
                retry.append(item)
                continue
            item.on_answer(*answer)
        if retry:
            log.warning("AlterPartition: retrying %d partitions", len(retry))
            self._requeue(retry)
            return False
        return True

    def _requeue(self, items: Any) -> None:
        for item in items:
            if item.wanted:
                self._unsent.setdefault(item.partition.tp, item)  # a newer one wins

    async def _send(self, batch: dict[TopicPartition, _Item]
                    ) -> dict[TopicPartition, tuple[int, int, tuple[int, ...], int]]:
        address = self.controller()
        if address is None:
            raise _Retry("no controller known")
        proposals = {tp: IsrProposal(i.change.leader_epoch, i.change.partition_epoch,
                                     tuple(sorted(i.change.proposed)), i.partition.topic_id)
                     for tp, i in batch.items()}
        try:
            return await self._ask(address, proposals, self.controller_timeout)
        except (KafkaConnectionError, OSError, asyncio.TimeoutError) as e:
            unreachable = e
        for relay in self.relays():        # point 5: through a peer that reaches it
            if relay == address:
                continue
            try:
                answers = await self._ask(relay, proposals, 2 * self.controller_timeout)
            except (KafkaConnectionError, OSError, asyncio.TimeoutError, _Retry) as e:
                log.debug("AlterPartition through %s:%d failed: %s", *relay, e)
                continue
            self.requests_relayed += 1
            log.info("AlterPartition for %d partitions answered through %s:%d (the "
                     "controller at %s:%d: %s)", len(batch), *relay, *address, unreachable)
            return answers
        raise unreachable

    async def _ask(self, address: tuple[str, int], proposals: dict[TopicPartition, IsrProposal],
                   timeout: float) -> dict[TopicPartition, tuple[int, int, tuple[int, ...], int]]:
        async with asyncio.timeout(timeout):
            conn = await self.pool.get(*address)
        self.requests_sent += 1
        resp = await alter_partition(conn, proposals, broker_id=self.broker_id,
                                     broker_epoch=self.broker_epoch(), max_version=self.max_version,
                                     timeout=timeout)
        if resp.error:
            raise _Retry(f"controller answered {ErrorCode.from_code(resp.error).name}")
        return {tp: (a.error, a.leader_epoch, a.isr, a.partition_epoch)
                for tp, a in resp.partitions.items()}


# The client id of forwarded AlterPartition requests: a broker that is not the controller
# forwards a leader's request (point 5) only if it does not carry this id, so a request
# takes one hop at most even while two brokers name each other as the controller.
RELAY_CLIENT_ID = "pybroker-alter-partition-relay"


class AlterPartitionRelay:
    """The forwarding side of point 5: a leader's AlterPartition, received by a broker
    that is not the controller, sent on to the controller this broker knows over
    connections of its own (``pool``, whose client id is RELAY_CLIENT_ID); the
    controller's answer is handed back as is. None: not forwarded (a forwarded
    request, or no other controller known, or it cannot be reached either); the
    handler then answers NOT_CONTROLLER and the leader tries elsewhere."""

    def __init__(self, broker_id: int, pool: Pool, controller: ControllerAddress,
                 controller_id: Callable[[], int | None]) -> None:
        self.broker_id, self.pool = broker_id, pool
        self.controller, self.controller_id = controller, controller_id
        self.forwarded = 0

    async def forward(self, client_id: str | None, request: Any, version: int) -> Any | None:
        if client_id == RELAY_CLIENT_ID or request.broker_id == self.broker_id \
                or self.controller_id() in (None, self.broker_id):
            return None
        address = self.controller()
        if address is None:
            return None
        try:
            conn = await self.pool.get(*address)
            resp = await conn.request(ApiKey.ALTER_PARTITION, request, version)
        except (KafkaConnectionError, OSError, asyncio.TimeoutError) as e:
            log.info("AlterPartition from broker %d not forwarded to the controller at "
                     "%s:%d: %s", request.broker_id, *address, e)
            return None
        self.forwarded += 1
        return resp


def _retriable(error: int) -> bool:
    return error != ErrorCode.NONE and error not in REVERT_ERRORS and error not in FENCED_ERRORS
