"""LogManager: every partition log under ``log.dirs`` (Kafka ``LogManager``).

Per log dir::

    meta.properties                      version=0, broker.id, cluster.id (ZooKeeper mode)
    .kafka_cleanshutdown                 written last on clean shutdown, removed at startup
    recovery-point-offset-checkpoint     topic partition offset: fsync'd up to here
    replication-offset-checkpoint        topic partition high-watermark
    log-start-offset-checkpoint          topic partition log-start-offset
    <topic>-<partition>/                 one PartitionLog
    <topic>-<partition>.<uuid>-delete/   a deleted log awaiting removal
    <topic>-<partition>.<uuid>-future/   a log being moved here (``move_log``)

Startup (numbered as it happens): 1. check/write meta.properties; 2. note the
clean-shutdown marker; 3. remove ``-delete`` dirs; 4. read the three
checkpoints; 5. open every partition directory (recovering it unless the
shutdown was clean); 6. remove the marker, so a crash from now on is seen.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence

from storage import checkpoints, filenames
from storage.config import LogConfig
from storage.log import Clock, PartitionLog, wall_clock_ms

TopicPartition = tuple[str, int]


class InconsistentMetaPropertiesError(Exception):
    """meta.properties disagrees with this broker's id or cluster id."""


class LogManager:
    def __init__(self, log_dirs: Sequence[str], config: LogConfig | None = None, *,
                 clock: Clock = wall_clock_ms,
                 topic_config: Callable[[str], LogConfig] | None = None) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.config = config or LogConfig()
        self.clock = clock
        self.topic_config = topic_config or (lambda _topic: self.config)
        self.logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self.had_clean_shutdown: dict[str, bool] = {}

    # -- startup / shutdown ---------------------------------------------------------

    def startup(self, broker_id: int | None = None, cluster_id: str | None = None) -> None:
        for log_dir in self.log_dirs:
            os.makedirs(log_dir, exist_ok=True)
        self._settle_future_dirs()
        for log_dir in self.log_dirs:
            if broker_id is not None:
                ensure_meta_properties(log_dir, broker_id, cluster_id)
            marker = os.path.join(log_dir, filenames.CLEAN_SHUTDOWN)
            clean = os.path.exists(marker)
            self.had_clean_shutdown[log_dir] = clean
            self._load_dir(log_dir, clean)
            if clean:
                os.unlink(marker)
                checkpoints.fsync_dir(log_dir)

    def _load_dir(self, log_dir: str, clean: bool) -> None:
        recovery = checkpoints.read_offsets(os.path.join(log_dir, filenames.RECOVERY_POINT_CHECKPOINT))
        hws = checkpoints.read_offsets(os.path.join(log_dir, filenames.REPLICATION_CHECKPOINT))
        starts = checkpoints.read_offsets(os.path.join(log_dir, filenames.LOG_START_CHECKPOINT))
        for name in sorted(os.listdir(log_dir)):
            path = os.path.join(log_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(filenames.DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                tp = filenames.parse_partition_dir(name)
            except ValueError:
                continue  # not ours (e.g. "-future" dirs of replica moves)
            if tp in self.logs:
                raise RuntimeError(f"duplicate log directories for {tp}: {path}, {self._dir_of[tp]}")
            log = PartitionLog.open(path, self.topic_config(tp[0]),
                                    recovery_point=recovery.get(tp, 0),
                                    log_start_offset=starts.get(tp, 0),
                                    clean_shutdown=clean, clock=self.clock)
            log.update_high_watermark(hws.get(tp, 0))
            self.logs[tp] = log
            self._dir_of[tp] = log_dir

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker."""
        for log in self.logs.values():
            log.flush()
            log.close()
        self.checkpoint_all()
        for log_dir in self.log_dirs:
            checkpoints.write_lines_atomically(os.path.join(log_dir, filenames.CLEAN_SHUTDOWN), [])
        self.logs.clear()
        self._dir_of.clear()

    # -- logs -------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def __iter__(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self.logs.items()))

    def get_or_create_log(self, topic: str, partition: int, *, config: LogConfig | None = None,
                          topic_id: str | None = None) -> PartitionLog:
        """The log of (topic, partition), created in the log dir holding fewest logs."""
        tp = (topic, partition)
        log = self.logs.get(tp)
        if log is None:
            counts = {d: 0 for d in self.log_dirs}
            for d in self._dir_of.values():
                counts[d] += 1
            log_dir = min(self.log_dirs, key=lambda d: counts[d])
            path = os.path.join(log_dir, filenames.partition_dir_name(topic, partition))
            log = PartitionLog.open(path, config or self.topic_config(topic), clock=self.clock)
            checkpoints.fsync_dir(log_dir)
            self.logs[tp] = log
            self._dir_of[tp] = log_dir
        if topic_id is not None and log.read_partition_metadata() != topic_id:
            log.write_partition_metadata(topic_id)
        return log

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log, rename its dir to ``<tp>.<uuid>-delete``, then remove it."""
        tp = (topic, partition)
        log = self.logs.pop(tp, None)
        if log is None:
            return False
        log_dir = self._dir_of.pop(tp)
        log.close()
        doomed = f"{log.dir}.{uuid.uuid4().hex}{filenames.DELETE_DIR_SUFFIX}"
        os.replace(log.dir, doomed)
        checkpoints.fsync_dir(log_dir)
        shutil.rmtree(doomed, ignore_errors=True)
        self.checkpoint_all()
        return True

    def dir_of(self, topic: str, partition: int) -> str | None:
        return self._dir_of.get((topic, partition))

    # -- replica moves between log dirs (AlterReplicaLogDirs) -------------------------

    def move_log(self, topic: str, partition: int, target_dir: str) -> bool:
        """Move a log to another of our log dirs, as Kafka's future-replica swap;
        -> False when it is already there. Raises KeyError (no such log) and
        ValueError (``target_dir`` is not one of ``log_dirs``).

        The log is paused (its lock held) throughout, so appends and reads wait:
        1. flush and close the log's files;
        2. copy its directory to ``<target>/<topic>-<p>.<uuid>-future``, fsync'd;
        3. rename the old directory to ``<topic>-<p>.<uuid>-delete``;
        4. rename the future directory to ``<target>/<topic>-<p>`` (the swap);
        5. reopen the same PartitionLog object there (every holder keeps it),
           remove the old copy and rewrite the checkpoints of both dirs.
        A crash after 2 leaves a future dir beside the live one (dropped at
        start-up); after 3 only the future dir (promoted at start-up)."""
        tp = (topic, partition)
        log = self.logs[tp]
        target = os.path.abspath(target_dir)
        if target not in self.log_dirs:
            raise ValueError(f"Log dir {target_dir} is not found in the config.")
        source = self._dir_of[tp]
        if source == target:
            return False
        name = filenames.partition_dir_name(topic, partition)
        tag = uuid.uuid4().hex
        future = os.path.join(target, f"{name}.{tag}{filenames.FUTURE_DIR_SUFFIX}")
        with log.lock:
            log.flush()
            log.close()
            shutil.copytree(log.dir, future)
            for f in os.listdir(future):
                checkpoints.fsync_path(os.path.join(future, f))
            checkpoints.fsync_dir(target)
            doomed = f"{log.dir}.{tag}{filenames.DELETE_DIR_SUFFIX}"
            os.replace(log.dir, doomed)
            checkpoints.fsync_dir(source)
            final = os.path.join(target, name)
            os.replace(future, final)
            checkpoints.fsync_dir(target)
            _reopen_in_place(log, final)
            self._dir_of[tp] = target
        shutil.rmtree(doomed, ignore_errors=True)
        self.checkpoint_all()
        return True

    def _settle_future_dirs(self) -> None:
        """Finish or drop replica moves a crash interrupted (see ``move_log``): a
        ``<tp>.<uuid>-future`` dir is dropped when the partition has a live dir
        anywhere, else renamed to ``<tp>`` (its old dir was already retired)."""
        live = {name for d in self.log_dirs for name in os.listdir(d)
                if os.path.isdir(os.path.join(d, name))}
        for log_dir in self.log_dirs:
            for name in sorted(os.listdir(log_dir)):
                if not name.endswith(filenames.FUTURE_DIR_SUFFIX):
                    continue
                path = os.path.join(log_dir, name)
                base = name[:-len(filenames.FUTURE_DIR_SUFFIX)].rsplit(".", 1)[0]
                if base in live:
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.replace(path, os.path.join(log_dir, base))
                    live.add(base)
                checkpoints.fsync_dir(log_dir)

    # -- periodic work (the broker schedules these) -----------------------------------

    def flush_dirty_logs(self) -> int:
        """Apply each log's flush policy; logs flushed."""
        return sum(1 for _, log in self if log.maybe_flush())

    def cleanup_logs(self) -> int:
        """Retention over every log; segments deleted."""
        return sum(log.delete_old_segments() for _, log in self)

    def checkpoint_all(self) -> None:
        self.checkpoint_recovery_points()
        self.checkpoint_high_watermarks()
        self.checkpoint_log_start_offsets()

    def _write(self, name: str, value: Callable[[PartitionLog], int | None]) -> None:
        for log_dir in self.log_dirs:
            entries = {}
            for tp, log in self.logs.items():
                if self._dir_of[tp] == log_dir:
                    offset = value(log)
                    if offset is not None:
                        entries[tp] = offset
            checkpoints.write_offsets(os.path.join(log_dir, name), entries)

    def checkpoint_recovery_points(self) -> None:
        self._write(filenames.RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_high_watermarks(self) -> None:
        self._write(filenames.REPLICATION_CHECKPOINT, lambda log: log.high_watermark)

    def checkpoint_log_start_offsets(self) -> None:
        # Kafka writes only logs whose start offset is above their first segment's base.
        self._write(filenames.LOG_START_CHECKPOINT,
                    lambda log: log.log_start_offset
                    if log.log_start_offset > log.segments[0].base_offset else None)



def _reopen_in_place(log: PartitionLog, path: str) -> None:
    """Open the (closed) log's files again from ``path`` into the same object,
    keeping its lock and its in-memory offsets (high watermark, log start,
    recovery point)."""
    hw, start, recovery_point = log.high_watermark, log.log_start_offset, log.recovery_point
    fresh = PartitionLog.open(path, log.config, recovery_point=recovery_point,
                              log_start_offset=start, clean_shutdown=True, clock=log.clock)
    lock = log.lock
    log.__dict__.update(fresh.__dict__)
    log.lock = lock
    log.recovery_point = recovery_point
    log.update_high_watermark(hw)


def read_meta_properties(log_dir: str) -> dict[str, str]:
    try:
        with open(os.path.join(log_dir, filenames.META_PROPERTIES), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    props = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    return props


def ensure_meta_properties(log_dir: str, broker_id: int, cluster_id: str | None) -> None:
    """Check meta.properties against this broker, writing it when absent (ZK mode, version 0)."""
    props = read_meta_properties(log_dir)
    if props:
        if props.get("broker.id") not in (None, str(broker_id)):
            raise InconsistentMetaPropertiesError(
                f"{log_dir}: broker.id {props['broker.id']} does not match {broker_id}")
        if cluster_id and props.get("cluster.id") not in (None, cluster_id):
            raise InconsistentMetaPropertiesError(
                f"{log_dir}: cluster.id {props['cluster.id']} does not match {cluster_id}")
        if cluster_id is None or props.get("cluster.id") == cluster_id:
            return
    lines = ["#", "#" + time.strftime("%a %b %d %H:%M:%S %Z %Y"), "version=0",
             f"broker.id={broker_id}"]
    if cluster_id:
        lines.append(f"cluster.id={cluster_id}")
    checkpoints.write_lines_atomically(os.path.join(log_dir, filenames.META_PROPERTIES), lines)
