"""The transaction-inspection verbs (KIP-664) and their routing, for ``pybroker
transactions``: ListTransactions (every broker lists the ids it coordinates),
DescribeTransactions (at the id's coordinator), DescribeProducers (at each
partition's leader), and aborting a hanging transaction with WriteTxnMarkers at the
partition's leader (what kafka-transactions.sh ``abort`` does).

Verbs take an open connection and return error codes (as ``verbs.py``); the
``TransactionsAdmin`` helpers route them over a ``KafkaAdmin``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from client.admin import KafkaAdmin
from client.connection import KafkaConnection
from client.groups import TRANSACTION_KEY, find_coordinator
from client.inter_broker import write_txn_markers
from client.verbs import TP, partitions_by_topic
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.spec import api


@dataclass(frozen=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str
    coordinator: int = -1


@dataclass(frozen=True)
class DescribedTransaction:
    error: int
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: tuple[TP, ...] = ()
    coordinator: int = -1


@dataclass(frozen=True)
class ProducerInfo:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True)
class PartitionProducers:
    error: int
    producers: list[ProducerInfo] = field(default_factory=list)


async def list_transactions(conn: KafkaConnection, states: Iterable[str] = (),
                            producer_ids: Iterable[int] = (), duration_ms: int = -1
                            ) -> tuple[int, list[str], list[ListedTransaction]]:
    """-> (error, unknown state filters, the ids this broker coordinates)."""
    spec = api(ApiKey.LIST_TRANSACTIONS).request
    resp = await conn.request(ApiKey.LIST_TRANSACTIONS, spec.new(
        state_filters=list(states), producer_id_filters=list(producer_ids),
        duration_filter=duration_ms))
    assert resp is not None
    return int(resp.error_code), list(resp.unknown_state_filters), [
        ListedTransaction(s.transactional_id, int(s.producer_id), s.transaction_state)
        for s in resp.transaction_states]


async def describe_transactions(conn: KafkaConnection, transactional_ids: Iterable[str]
                                ) -> list[DescribedTransaction]:
    spec = api(ApiKey.DESCRIBE_TRANSACTIONS).request
    resp = await conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                              spec.new(transactional_ids=list(transactional_ids)))
    assert resp is not None
    return [DescribedTransaction(
        int(s.error_code), s.transactional_id, s.transaction_state,
        int(s.transaction_timeout_ms), int(s.transaction_start_time_ms), int(s.producer_id),
        int(s.producer_epoch), tuple((t.topic, int(p)) for t in s.topics for p in t.partitions))
        for s in resp.transaction_states]


async def describe_producers(conn: KafkaConnection, partitions: Iterable[TP]
                             ) -> dict[TP, PartitionProducers]:
    spec = api(ApiKey.DESCRIBE_PRODUCERS).request
    topic = spec.structs["TopicRequest"]
    resp = await conn.request(ApiKey.DESCRIBE_PRODUCERS, spec.new(topics=[
        topic.new(name=t, partition_indexes=ps)
        for t, ps in partitions_by_topic(partitions).items()]))
    assert resp is not None
    return {(t.name, int(p.partition_index)): PartitionProducers(int(p.error_code), [
        ProducerInfo(int(s.producer_id), int(s.producer_epoch), int(s.last_sequence),
                     int(s.last_timestamp), int(s.coordinator_epoch),
                     int(s.current_txn_start_offset)) for s in p.active_producers])
        for t in resp.topics for p in t.partitions}


class TransactionsAdmin:
    """The verbs routed over ``admin``'s connections (see the module docstring)."""

    def __init__(self, admin: KafkaAdmin) -> None:
        self.admin = admin

    async def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                   duration_ms: int = -1) -> tuple[list[str], list[ListedTransaction]]:
        """Every broker's list, merged. -> (unknown state filters, transactions)."""
        cluster = await self.admin.metadata([])
        unknown: list[str] = []
        out: list[ListedTransaction] = []
        for broker_id in sorted(cluster.brokers):
            conn = await self.admin.broker_connection(broker_id)
            error, bad, listed = await list_transactions(conn, states, producer_ids, duration_ms)
            if error != ErrorCode.NONE:
                raise KafkaError(error, f"ListTransactions on broker {broker_id}: "
                                        f"{ErrorCode.from_code(error).name}")
            unknown = bad
            out += [ListedTransaction(t.transactional_id, t.producer_id, t.state, broker_id)
                    for t in listed]
        return unknown, sorted(out, key=lambda t: t.transactional_id)

    async def describe(self, transactional_id: str) -> DescribedTransaction:
        found = await find_coordinator(await self.admin.any_connection(), transactional_id,
                                       key_type=TRANSACTION_KEY)
        if found.error != ErrorCode.NONE:
            return DescribedTransaction(found.error, transactional_id)
        conn = await self.admin.pool.get(found.host, found.port)
        [one] = await describe_transactions(conn, [transactional_id])
        return replace(one, coordinator=found.node_id)

    async def producers(self, partitions: Iterable[TP]) -> dict[TP, PartitionProducers]:
        out: dict[TP, PartitionProducers] = {}
        for tp in partitions:
            conn = await self.admin.leader_connection(*tp, refresh=True)
            out.update(await describe_producers(conn, [tp]))
        return out

    async def abort(self, tp: TP, start_offset: int) -> ProducerInfo:
        """Abort the transaction open on ``tp`` at ``start_offset`` (a hanging one: its
        coordinator forgot it) with an ABORT marker at the leader. -> the producer."""
        answer = (await self.producers([tp]))[tp]
        if answer.error != ErrorCode.NONE:
            raise KafkaError(answer.error, f"DescribeProducers for {tp[0]}-{tp[1]}: "
                                           f"{ErrorCode.from_code(answer.error).name}")
        match = [p for p in answer.producers if p.current_txn_start_offset == start_offset]
        if not match:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE, f"no transaction open at offset "
                                                          f"{start_offset} on {tp[0]}-{tp[1]}")
        p = match[0]
        conn = await self.admin.leader_connection(*tp)
        errors = await write_txn_markers(conn, [(p.producer_id, p.producer_epoch, False,
                                                 p.coordinator_epoch, [tp])])
        error = errors.get(p.producer_id, {}).get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
        if error != ErrorCode.NONE:
            raise KafkaError(error, f"WriteTxnMarkers for {tp[0]}-{tp[1]}: "
                                    f"{ErrorCode.from_code(error).name}")
        return p


__all__ = ["DescribedTransaction", "ListedTransaction", "PartitionProducers", "ProducerInfo",
           "TransactionsAdmin", "describe_producers", "describe_transactions",
           "list_transactions"]
