"""The transactional producer's request verbs: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn (to the transaction coordinator) and TxnOffsetCommit (to
the group coordinator).

Like ``verbs.py``: each takes an open ``KafkaConnection`` (the caller finds the
coordinator), sends at the highest version both sides speak, and returns error
codes rather than raising them. AddPartitionsToTxn is capped at v3: v4+ is the
brokers' batched form (KIP-890), which a client never sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from client.connection import KafkaConnection
from client.verbs import TP, _by_topic, partitions_by_topic
from protocol.api_keys import ApiKey
from protocol.spec import api

ADD_PARTITIONS_CLIENT_MAX = 3       # v4+ is the broker-to-coordinator form


@dataclass(frozen=True)
class ProducerIdentity:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1


async def init_producer_id(conn: KafkaConnection, transactional_id: str | None, *,
                           transaction_timeout_ms: int, producer_id: int = -1,
                           producer_epoch: int = -1) -> ProducerIdentity:
    """A producer id and epoch for ``transactional_id`` (None: idempotent only).
    Passing the current id and epoch (v3+, KIP-360) asks for a bump instead of a
    fresh id; older brokers ignore them."""
    spec = api(ApiKey.INIT_PRODUCER_ID).request
    resp = await conn.request(ApiKey.INIT_PRODUCER_ID, spec.new(
        transactional_id=transactional_id, transaction_timeout_ms=transaction_timeout_ms,
        producer_id=producer_id, producer_epoch=producer_epoch))
    assert resp is not None
    return ProducerIdentity(int(resp.error_code), int(resp.producer_id), int(resp.producer_epoch))


async def add_partitions_to_txn(conn: KafkaConnection, transactional_id: str, producer_id: int,
                                producer_epoch: int, partitions: Iterable[TP]) -> dict[TP, int]:
    """Add ``partitions`` to the ongoing transaction. -> error code per partition."""
    version = conn.version_for(ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_CLIENT_MAX)
    spec = api(ApiKey.ADD_PARTITIONS_TO_TXN).request
    topic = spec.structs["AddPartitionsToTxnTopic"]
    body = spec.new(v3_and_below_transactional_id=transactional_id,
                    v3_and_below_producer_id=producer_id,
                    v3_and_below_producer_epoch=producer_epoch,
                    v3_and_below_topics=[topic.new(name=name, partitions=indexes)
                                         for name, indexes in
                                         partitions_by_topic(partitions).items()])
    resp = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, body, version)
    assert resp is not None
    return {(t.name, r.partition_index): int(r.partition_error_code)
            for t in resp.results_by_topic_v3_and_below for r in t.results_by_partition}


async def add_offsets_to_txn(conn: KafkaConnection, transactional_id: str, producer_id: int,
                             producer_epoch: int, group_id: str) -> int:
    """Add ``group_id``'s offsets partition to the transaction. -> error code."""
    return await _error_only(conn, ApiKey.ADD_OFFSETS_TO_TXN, transactional_id=transactional_id,
                             producer_id=producer_id, producer_epoch=producer_epoch,
                             group_id=group_id)


async def end_txn(conn: KafkaConnection, transactional_id: str, producer_id: int,
                  producer_epoch: int, commit: bool) -> int:
    """Commit (or abort) the ongoing transaction. -> error code."""
    return await _error_only(conn, ApiKey.END_TXN, transactional_id=transactional_id,
                             producer_id=producer_id, producer_epoch=producer_epoch,
                             committed=commit)


async def _error_only(conn: KafkaConnection, api_key: int, **fields: object) -> int:
    """A request whose response is just an error code (and a throttle time)."""
    resp = await conn.request(api_key, api(api_key).request.new(**fields))
    assert resp is not None
    return int(resp.error_code)


async def txn_offset_commit(conn: KafkaConnection, transactional_id: str, group_id: str,
                            producer_id: int, producer_epoch: int, offsets: Mapping[TP, int], *,
                            generation_id: int = -1, member_id: str = "",
                            group_instance_id: str | None = None,
                            metadata: str = "") -> dict[TP, int]:
    """Commit ``offsets`` for ``group_id`` as part of the transaction (visible once it
    commits). Generation and member (v3+, KIP-447) let the coordinator fence a zombie
    member. -> error code per partition."""
    spec = api(ApiKey.TXN_OFFSET_COMMIT).request
    s = spec.structs
    body = spec.new(
        transactional_id=transactional_id, group_id=group_id, producer_id=producer_id,
        producer_epoch=producer_epoch, generation_id=generation_id, member_id=member_id,
        group_instance_id=group_instance_id,
        topics=[s["TxnOffsetCommitRequestTopic"].new(name=topic, partitions=[
            s["TxnOffsetCommitRequestPartition"].new(
                partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                committed_metadata=metadata) for p, o in parts])
            for topic, parts in _by_topic(offsets.items()).items()])
    resp = await conn.request(ApiKey.TXN_OFFSET_COMMIT, body)
    assert resp is not None
    return {(t.name, p.partition_index): int(p.error_code)
            for t in resp.topics for p in t.partitions}


__all__ = ["ProducerIdentity", "add_offsets_to_txn", "add_partitions_to_txn", "end_txn",
           "init_producer_id", "txn_offset_commit"]
