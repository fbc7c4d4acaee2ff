"""Produce (API key 0), versions 0-11.

* v0-2 carry magic 0/1 message sets: up-converted here to one magic-2 batch
  (same codec; zstd is impossible there). v3+ must carry exactly one magic-2
  batch per partition (INVALID_RECORD otherwise), as Kafka checks.
* acks 0 / 1 / -1 (all); anything else is INVALID_REQUIRED_ACKS. acks=0 gets
  no response (NO_RESPONSE); if one of its partitions failed, CLOSE_CONNECTION:
  the connection closes after the earlier responses, so the client refreshes
  metadata (Kafka does the same).
* Errors are per partition with nothing appended. NOT_LEADER_OR_FOLLOWER
  carries the current leader (v10+ tagged CurrentLeader and NodeEndpoints,
  from the metadata cache). A partition we do not host but the cluster knows
  is NOT_LEADER_OR_FOLLOWER; one nobody knows is UNKNOWN_TOPIC_OR_PARTITION.
* ACLs (broker/acl): a topic needs WRITE, else TOPIC_AUTHORIZATION_FAILED for
  each of its partitions, nothing appended. A request whose first batch of some
  partition is transactional needs a TransactionalId with WRITE on it, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED everywhere. (Kafka refuses a null id so
  even with no authorizer; here, with no authorizer, nothing is checked: the
  transaction tools' tests write such "hanging" batches on purpose.) Idempotent
  batches need nothing more (Kafka 3.x checks IDEMPOTENT_WRITE at InitProducerId).
* Transactional batches open the producer's transaction on the partition (its
  LSO stops there until the coordinator's marker); the partition must have been
  added with AddPartitionsToTxn first: with transaction.partition.verification.enable
  (KIP-890, default true) the leader asks the coordinator before the first batch
  (``coordinator.transaction.verification``, through LeaderAppends.append_records).
* Record-level validation (issue 17, protocol/record_validation.py, run by the
  leader's Partition): every record of every batch is parsed (compressed batches
  inflated, bounded by 64 x max.message.bytes); rule breaks (a null key on a
  compacted topic, a timestamp outside message.timestamp.before/after.max.ms)
  come back as INVALID_RECORD / INVALID_TIMESTAMP with an ``error_message`` and,
  v8+, KIP-467 ``record_errors`` (batch_index, message); nothing is appended.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.acl.checks import authorized_names
from broker.context import RequestContext
from broker.dispatch import CLOSE_CONNECTION, NO_RESPONSE, HandlerResult, handler
from broker.handler_support import LEADER_HINT_ERRORS, leader_hint, node_endpoints, refine_unknown
from protocol import legacy_records, record_validation
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from protocol.records import ATTRIBUTES_AT, CREATE_TIME, HEADER_SIZE, MAGIC, MAGIC_AT, \
    TRANSACTIONAL_BIT, BatchBuilder
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.PRODUCE).response
TOPIC = SPEC.structs["TopicProduceResponse"]
PARTITION = SPEC.structs["PartitionProduceResponse"]
LEADER = SPEC.structs["LeaderIdAndEpoch"]
NODE = SPEC.structs["NodeEndpoint"]
RECORD_ERROR = SPEC.structs["BatchIndexAndErrorMessage"]

def upconvert(data: Any, max_message_bytes: int = 1_048_588) -> bytearray:
    """A v0-2 message set as one magic-2 batch (raises KafkaError with Kafka's codes).

    The producer's codec is kept; its timestamp type is not (the topic's
    message.timestamp.type decides, when the log appends). Compressed wrappers
    inflate to at most record_validation.max_inflated_bytes(max_message_bytes)
    (the broker's message.max.bytes: the topic's override is not looked up here;
    the up-converted batch is then validated against the topic as any other).
    """
    try:
        converted = legacy_records.upconvert(
            data, max_inflated=record_validation.max_inflated_bytes(max_message_bytes))
    except legacy_records.UnsupportedLegacyCodec as e:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, str(e)) from None
    except legacy_records.InvalidLegacyMessage as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(e)) from None
    except (legacy_records.CorruptLegacyMessage, ValueError) as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(e)) from None
    if not converted.records:
        raise KafkaError(ErrorCode.INVALID_RECORD, "empty message set")
    builder = BatchBuilder(codec=int(converted.codec), timestamp_type=CREATE_TIME)
    for _offset, timestamp, key, value, _headers in converted.records:
        builder.append(key, value, timestamp)
    return builder.build()


@handler(ApiKey.PRODUCE)
async def handle_produce(ctx: RequestContext, request: Struct) -> HandlerResult:
    version = ctx.version
    early: dict[tuple[str, int], tuple[int, str | None]] = {}
    entries: dict[tuple[str, int], Any] = {}
    tid = request.transactional_id if version >= 3 else None
    txn_allowed = (ctx.broker.authorizer is None
                   or not _has_transactional_records(request, version)
                   or (tid is not None
                       and allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid)))
    writable = authorized_names(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                (t.name for t in request.topic_data)) if txn_allowed else set()
    for topic in request.topic_data:
        for pd in topic.partition_data:
            tp = (topic.name, pd.index)
            data = pd.records
            if not txn_allowed:
                early[tp] = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
                continue
            if topic.name not in writable:
                early[tp] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                continue
            try:
                if data is None or len(data) == 0:
                    raise KafkaError(ErrorCode.INVALID_RECORD, "produce without records")
                if version < 3:
                    data = upconvert(data, _message_max_bytes(ctx))
                entries[tp] = data
            except KafkaError as e:
                early[tp] = (e.code, e.message)
    results = await ctx.broker.replicas.appends.append_records(
        request.acks, request.timeout_ms, entries,
        transactional_id=request.transactional_id, single_batch=version >= 3,
        appended=ctx.appended)
    errors = {tp: (r.error, r.error_message) for tp, r in results.items() if r.error}
    errors.update(early)
    if request.acks == 0:
        if errors:
            log.info("closing connection %s: acks=0 produce failed for %s",
                     ctx.connection.peer,
                     ", ".join(f"{t}-{p}: {ErrorCode.from_code(c).name}" for (t, p), (c, _) in errors.items()))
            return CLOSE_CONNECTION
        return NO_RESPONSE
    return _response(ctx, request, results, early)


def _message_max_bytes(ctx: RequestContext) -> int:
    """The broker's message.max.bytes."""
    return ctx.broker.config.message_max_bytes


def _has_transactional_records(request: Struct, version: int) -> bool:
    """RequestUtils.hasTransactionalRecords: the first batch of some partition is
    transactional (magic 2 only, so never before v3)."""
    if version < 3:
        return False
    for topic in request.topic_data:
        for pd in topic.partition_data:
            data = pd.records
            if data is not None and len(data) >= HEADER_SIZE and data[MAGIC_AT] == MAGIC \
                    and data[ATTRIBUTES_AT + 1] & TRANSACTIONAL_BIT:
                return True
    return False


def _response(ctx: RequestContext, request: Struct, results: dict[tuple[str, int], Any],
              early: dict[tuple[str, int], tuple[int, str | None]]) -> Struct:
    version = ctx.version
    leaders: set[int] = set()
    topics = []
    for topic in request.topic_data:
        parts = []
        for pd in topic.partition_data:
            tp = (topic.name, pd.index)
            part = PARTITION.new(index=pd.index)
            if tp in early:
                part.error_code, part.error_message = early[tp]
            else:
                r = results[tp]
                part.error_code = refine_unknown(ctx, topic.name, pd.index, r.error)
                part.error_message = r.error_message
                part.base_offset = r.base_offset
                part.log_append_time_ms = r.log_append_time
                part.log_start_offset = r.log_start_offset
                if r.record_errors:
                    part.record_errors = [RECORD_ERROR.new(batch_index=i, batch_index_error_message=m)
                                          for i, m in r.record_errors]
            if part.error_code in LEADER_HINT_ERRORS and version >= 10:
                hint = leader_hint(ctx, topic.name, pd.index)
                if hint is not None and hint[0] >= 0:
                    part.current_leader = LEADER.new(leader_id=hint[0], leader_epoch=hint[1])
                    leaders.add(hint[0])
            parts.append(part)
        topics.append(TOPIC.new(name=topic.name, partition_responses=parts))
    response = SPEC.new(responses=topics, throttle_time_ms=0)
    if leaders and version >= 10:
        response.node_endpoints = node_endpoints(ctx, leaders, NODE)
    return response
