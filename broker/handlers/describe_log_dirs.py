"""DescribeLogDirs (API key 35), versions 0-4, as Kafka's
ReplicaManager.describeLogDirs.

* The caller needs DESCRIBE on the CLUSTER (broker/acl); else no results and
  the top-level ErrorCode (v3+) CLUSTER_AUTHORIZATION_FAILED.
* One result per configured log dir (absolute path): a dir that is offline
  (its disk failed, broker/log_dirs/) or cannot be read is KAFKA_STORAGE_ERROR
  with no topics, as Kafka; otherwise its partitions (all of
  them for a null topic list, else only those asked for), each with its size
  in bytes, its offset lag (max(HW - LEO, 0): 0 unless a future replica, which
  this broker never keeps across requests since moves complete in place) and
  IsFutureKey false; topics without a listed partition are left out.
* v4: TotalBytes / UsableBytes of the dir's file system (statvfs: blocks and
  blocks available to unprivileged users, as Java's FileStore).
"""

from __future__ import annotations

import os
from typing import Any

from broker.acl.acl_model import AclOperation
from broker.acl.authorizer import allowed_cluster
from broker.context import RequestContext
from broker.dispatch import handler
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema import Struct
from protocol.spec import api

SPEC = api(ApiKey.DESCRIBE_LOG_DIRS).response
RESULT = SPEC.structs["DescribeLogDirsResult"]
TOPIC = SPEC.structs["DescribeLogDirsTopic"]
PARTITION = SPEC.structs["DescribeLogDirsPartition"]

LONG_MAX = (1 << 63) - 1


def _space(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``path``."""
    st = os.statvfs(path)
    total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return min(total, LONG_MAX), min(usable, LONG_MAX)


def _dir_result(logs: Any, log_dir: str, wanted: set[tuple[str, int]] | None) -> Struct:
    offline = RESULT.new(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=log_dir, topics=[])
    if logs.is_offline(log_dir) or not os.path.isdir(log_dir) \
            or not os.access(log_dir, os.R_OK | os.X_OK):
        return offline
    try:
        total, usable = _space(log_dir)
    except OSError:
        return offline
    by_topic: dict[str, list[Struct]] = {}
    for (topic, partition), plog in sorted(logs, key=lambda item: item[0]):
        if logs.dir_of(topic, partition) != log_dir:
            continue
        if wanted is not None and (topic, partition) not in wanted:
            continue
        by_topic.setdefault(topic, []).append(PARTITION.new(
            partition_index=partition, partition_size=plog.size_in_bytes,
            offset_lag=max(plog.high_watermark - plog.log_end_offset, 0), is_future_key=False))
    return RESULT.new(error_code=0, log_dir=log_dir, total_bytes=total, usable_bytes=usable,
                      topics=[TOPIC.new(name=t, partitions=ps) for t, ps in by_topic.items()])


@handler(ApiKey.DESCRIBE_LOG_DIRS)
async def handle_describe_log_dirs(ctx: RequestContext, request: Struct) -> Struct:
    if not allowed_cluster(ctx, AclOperation.DESCRIBE):
        return SPEC.new(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                        results=[])
    logs = ctx.broker.logs
    wanted = None if request.topics is None else {
        (t.topic, p) for t in request.topics for p in t.partitions}
    results = [_dir_result(logs, d, wanted) for d in logs.log_dirs]
    return SPEC.new(throttle_time_ms=0, error_code=0, results=results)
