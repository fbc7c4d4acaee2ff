"""TxnOffsetCommit (API key 28), versions 0-4: a transactional producer commits a
consumer group's offsets inside its transaction (sendOffsetsToTransaction), after
AddOffsetsToTxn added the group's __consumer_offsets partition (Kafka's
handleTxnOffsetCommitRequest).

With an authorizer: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group
(GROUP_AUTHORIZATION_FAILED) for every partition; READ on each topic
(TOPIC_AUTHORIZATION_FAILED for its partitions). Unknown partitions are
UNKNOWN_TOPIC_OR_PARTITION; a negative producer id or epoch (no producer)
INVALID_PRODUCER_ID_MAPPING for every partition. The rest goes to the group coordinator
(coordinator/group/classic/txn_offset_ops.py): written as part of the transaction,
visible only once its COMMIT marker lands. v3+ carry the member id, generation
and instance id for KIP-447's fencing.
"""

from __future__ import annotations

from broker.acl.acl_model import AclOperation, ResourceType
from broker.acl.authorizer import allowed
from broker.context import RequestContext
from coordinator.group.classic import OffsetAndMetadata
from broker.coordination.groups import coordinator_of
from broker.dispatch import handler
from broker.handler_support import partition_exists
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.TXN_OFFSET_COMMIT).response
TOPIC = SPEC.structs["TxnOffsetCommitResponseTopic"]
PARTITION = SPEC.structs["TxnOffsetCommitResponsePartition"]


@handler(ApiKey.TXN_OFFSET_COMMIT)
async def handle_txn_offset_commit(ctx: RequestContext, request: Struct) -> Struct:
    v = ctx.version
    tps = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    errors: dict[tuple[str, int], int] = {}
    if not allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                   request.transactional_id):
        errors = dict.fromkeys(tps, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        errors = dict.fromkeys(tps, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    elif request.producer_id < 0 or request.producer_epoch < 0:
        # no producer: no transaction to add the offsets to (what Kafka's verification
        # of the transaction answers for a producer id it does not know)
        errors = dict.fromkeys(tps, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    else:
        coordinator = coordinator_of(ctx.broker)
        now = coordinator.runtime.clock()
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        for t in request.topics:
            readable = allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if not readable:
                    errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif not partition_exists(ctx.broker.metadata, t.name, p.partition_index):
                    errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    offsets[tp] = OffsetAndMetadata(
                        offset=p.committed_offset, metadata=p.committed_metadata or "",
                        commit_timestamp=now,
                        leader_epoch=p.committed_leader_epoch if v >= 2 else -1)
        if offsets:
            errors.update(await coordinator.txn.commit(
                request.group_id, int(request.producer_id), int(request.producer_epoch),
                request.member_id if v >= 3 else "",
                request.group_instance_id if v >= 3 else None,
                request.generation_id if v >= 3 else -1, offsets))
    return SPEC.new(throttle_time_ms=0, topics=[
        TOPIC.new(name=t.name, partitions=[
            PARTITION.new(partition_index=p.partition_index,
                          error_code=int(errors[(t.name, p.partition_index)]))
            for p in t.partitions])
        for t in request.topics])
