"""Sending record batches to their partitions' leaders, with retries.

``send_batches`` is the producer loop the tools, the Spark sink and bulk replay
share; batching records into batches stays with the caller (``protocol.records``
builds them; ``client.partitioner`` picks partitions).

Theory of operation, one round:

1. Group the pending partitions by leader, from ``admin.cluster`` (refreshed
   first when a pending partition has no known leader, and after every round
   that left something to retry).
2. Send each leader one Produce holding all its pending partitions' batches.
3. A partition whose answer is NONE is done; one with a retriable error, no
   leader, or whose leader's connection failed stays pending; any other error
   is final for it.
4. Repeat after a back-off (doubling, capped) while ``retries`` allow. What is
   still pending then keeps its last error.

A batch that failed with a connection error may have been appended all the
same (the answer was lost); resending it can duplicate it, as with any
non-idempotent Kafka producer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from client.admin import KafkaAdmin
from client.errors import KafkaConnectionError, NoCommonVersion
from client.verbs import TP, ProduceResult, Records, produce
from protocol.errors import ErrorCode


async def send_batches(admin: KafkaAdmin, batches: Mapping[TP, Records], *, acks: int = -1,
                       timeout_ms: int = 30000, retries: int = 5, backoff: float = 0.1,
                       max_backoff: float = 1.0,
                       transactional_id: str | None = None) -> dict[TP, ProduceResult]:
    """Produce ``batches[tp]`` to each partition's leader; see the module docstring.
    ``transactional_id`` goes in the request when the batches are transactional
    (``client.transactional`` sends them so).
    -> tp -> the final result (error NONE with the base offset, or the last error;
    acks=0 results carry no offset)."""
    pending = dict(batches)
    results: dict[TP, ProduceResult] = {}
    topics = sorted({t for t, _ in pending})
    refresh = admin.cluster is None
    for attempt in range(retries + 1):
        cluster = admin.cluster
        if refresh or cluster is None or any(cluster.leader(*tp) is None for tp in pending):
            await admin.metadata(topics)
        assert admin.cluster is not None
        by_leader: dict[int, dict[TP, Records]] = {}
        for tp, batch in pending.items():
            leader = admin.cluster.leader(*tp)
            if leader is None:
                results[tp] = ProduceResult(ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                by_leader.setdefault(leader.node_id, {})[tp] = batch
        for node_id, sent in by_leader.items():
            results.update(await _send_to(admin, node_id, sent, acks, timeout_ms,
                                          transactional_id))
        pending = {tp: b for tp, b in pending.items() if _retriable(results[tp].error)}
        if not pending or attempt == retries:
            break
        refresh = True
        await asyncio.sleep(min(backoff * 2 ** attempt, max_backoff))
    return results


async def _send_to(admin: KafkaAdmin, node_id: int, batches: dict[TP, Records], acks: int,
                   timeout_ms: int, transactional_id: str | None) -> dict[TP, ProduceResult]:
    try:
        conn = await admin.broker_connection(node_id)
        answers = await produce(conn, batches, acks=acks, timeout_ms=timeout_ms,
                                transactional_id=transactional_id,
                                request_timeout=timeout_ms / 1000 + 5)
    except NoCommonVersion:
        raise                   # a broker below Produce v3: retrying cannot help
    except KafkaConnectionError as e:
        return {tp: ProduceResult(ErrorCode.NETWORK_EXCEPTION, message=str(e)) for tp in batches}
    if answers is None:  # acks=0: sent, nothing to hear
        return {tp: ProduceResult(ErrorCode.NONE) for tp in batches}
    return {tp: answers.get(tp, ProduceResult(ErrorCode.UNKNOWN_SERVER_ERROR,
                                              message="no answer for the partition"))
            for tp in batches}


def _retriable(error: int) -> bool:
    return error != ErrorCode.NONE and ErrorCode.from_code(error).retriable
