"""AlterReplicaLogDirs (API key 34), versions 0-2, as Kafka's
ReplicaManager.alterReplicaLogDirs.

* The caller needs ALTER on the CLUSTER (broker/acl); else every partition
  answers CLUSTER_AUTHORIZATION_FAILED.
* Per partition (a partition named twice: the last dir wins, as Kafka's map):
  - "<topic>-<p>.<uuid>-future" longer than 255 chars -> INVALID_TOPIC_EXCEPTION;
  - a path that is not one of log.dirs (compared as absolute paths)
    -> LOG_DIR_NOT_FOUND; a configured dir we cannot use -> KAFKA_STORAGE_ERROR;
  - no replica of it here -> REPLICA_NOT_AVAILABLE (Kafka keeps that code for
    NOT_LEADER_OR_FOLLOWER here, for compatibility);
  - already in that dir -> NONE, nothing done;
  - else the log is moved (LogManager.move_log: paused, copied to a
    "-future" dir, swapped in) before answering NONE; an I/O failure is
    KAFKA_STORAGE_ERROR. Kafka answers at once and copies in the background;
    answering after the copy is the same contract, only later.
"""

from __future__ import annotations

import asyncio
import logging
import os

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

log = logging.getLogger(__name__)

SPEC = api(ApiKey.ALTER_REPLICA_LOG_DIRS).response
TOPIC = SPEC.structs["AlterReplicaLogDirTopicResult"]
PARTITION = SPEC.structs["AlterReplicaLogDirPartitionResult"]

MAX_DIR_NAME = 255
FUTURE_NAME_EXTRA = len(".") + 32 + len("-future")   # ".<uuid hex>-future"


async def _move(ctx: RequestContext, topic: str, partition: int, path: str) -> int:
    logs = ctx.broker.logs
    if len(f"{topic}-{partition}") + FUTURE_NAME_EXTRA > MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    target = os.path.abspath(path)
    if target not in logs.log_dirs:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if not os.path.isdir(target) or not os.access(target, os.W_OK | os.X_OK):
        return ErrorCode.KAFKA_STORAGE_ERROR
    if logs.get_log(topic, partition) is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    if logs.dir_of(topic, partition) == target:
        return ErrorCode.NONE
    try:
        await asyncio.to_thread(logs.move_log, topic, partition, target)
    except KeyError:  # the log went away meanwhile (deleted)
        return ErrorCode.REPLICA_NOT_AVAILABLE
    except OSError as e:
        log.error("moving %s-%d to %s failed: %s", topic, partition, target, e)
        return ErrorCode.KAFKA_STORAGE_ERROR
    log.info("moved the replica of %s-%d to log dir %s", topic, partition, target)
    return ErrorCode.NONE


@handler(ApiKey.ALTER_REPLICA_LOG_DIRS)
async def handle_alter_replica_log_dirs(ctx: RequestContext, request: Struct) -> Struct:
    wanted: dict[tuple[str, int], str] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                wanted.pop((t.name, p), None)
                wanted[(t.name, p)] = d.path
    authorized = allowed_cluster(ctx, AclOperation.ALTER)
    by_topic: dict[str, list[Struct]] = {}
    for (topic, partition), path in wanted.items():
        error = (await _move(ctx, topic, partition, path) if authorized
                 else ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        by_topic.setdefault(topic, []).append(
            PARTITION.new(partition_index=partition, error_code=int(error)))
    return SPEC.new(throttle_time_ms=0, results=[
        TOPIC.new(topic_name=t, partitions=ps) for t, ps in by_topic.items()])
