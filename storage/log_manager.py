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

Startup (numbered as it happens): 1. create each dir and check it takes a
write (a probe file, written, fsync'd, removed); 2. check/write meta.properties;
3. note the clean-shutdown marker; 4. remove ``-delete`` dirs; 5. read the three
checkpoints; 6. open every partition directory (recovering it unless the
shutdown was clean); 7. remove the marker, so a crash from now on is seen.

Offline log dirs (KIP-112; Kafka's LogManager.handleLogDirFailure). A dir goes
offline through ``report_failure`` only: the write-path guard of every log
(storage/io_guard.py) calls it on an OSError, and so do this manager's own
writes (checkpoints, the marker, creating or deleting a log) and a start-up
step that fails for one dir. From that moment every log in the dir refuses
writes, and the dir gets nothing written again in this process: no checkpoint,
no clean-shutdown marker (so the next start recovers it), no new log. The
owner is told through ``on_dir_failure`` (the broker's failure channel); it
then calls ``take_dir_offline``, which closes the dir's logs without writing
and drops them from the live set. At start-up a dir that fails is offline
from the start and the others load; ``NoLiveLogDirError`` when none is left.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence

from storage import checkpoints, filenames
from storage.config import LogConfig
from storage.io_guard import FailureSink, LogDirOfflineError
from storage.log import Clock, PartitionLog, wall_clock_ms

TopicPartition = tuple[str, int]
PROBE_FILE = ".writable-probe"      # written, fsync'd and removed at start-up
logger = logging.getLogger(__name__)


class InconsistentMetaPropertiesError(Exception):
    """meta.properties disagrees with this broker's id or cluster id."""


class NoLiveLogDirError(Exception):
    """Every configured log dir is offline (Kafka shuts the broker down)."""


class LogManager:
    def __init__(self, log_dirs: Sequence[str], config: LogConfig | None = None, *,
                 clock: Clock = wall_clock_ms,
                 topic_config: Callable[[str], LogConfig] | None = None,
                 on_dir_failure: FailureSink | None = None) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.config = config or LogConfig()
        self.clock = clock
        self._flush_observer: Callable[[float], None] | None = None
        self.topic_config = topic_config or (lambda _topic: self.config)
        self.on_dir_failure = on_dir_failure
        self.logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, str] = {}
        self.had_clean_shutdown: dict[str, bool] = {}
        # log dir -> why it is offline; entries are only ever added (report_failure)
        self.offline_dirs: dict[str, str] = {}
        self._offline_lock = threading.Lock()   # report_failure runs in worker threads too
        self._checkpoint_lock = threading.Lock()  # checkpoint files: one writer at a time
        # Paths whose creation, rename or rewrite is not fsync'd yet (see sync_deferred)
        self._unsynced: set[str] = set()
        self._unsynced_lock = threading.Lock()

    # -- offline log dirs (see the module docstring) ----------------------------------

    @property
    def flush_observer(self) -> Callable[[float], None] | None:
        """PartitionLog.flush_observer of every log held, now and later (the metrics)."""
        return self._flush_observer

    @flush_observer.setter
    def flush_observer(self, observer: Callable[[float], None] | None) -> None:
        self._flush_observer = observer
        for plog in list(self.logs.values()):
            plog.flush_observer = observer

    @property
    def live_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def is_offline(self, log_dir: str) -> bool:
        return os.path.abspath(log_dir) in self.offline_dirs

    def report_failure(self, log_dir: str, what: str, error: OSError) -> None:
        """An OSError on a write path in ``log_dir``: the whole dir goes offline now
        (its logs refuse writes) and ``on_dir_failure`` is told, once per dir. Any
        thread; idempotent."""
        log_dir = os.path.abspath(log_dir)
        with self._offline_lock:
            if log_dir in self.offline_dirs or log_dir not in self.log_dirs:
                return
            self.offline_dirs[log_dir] = f"{what}: {error}"
        for tp, d in list(self._dir_of.items()):
            plog = self.logs.get(tp)
            if d == log_dir and plog is not None:
                plog.offline = True
        if self.on_dir_failure is not None:
            self.on_dir_failure(log_dir, what, error)      # which logs it (the channel)
        else:
            logger.error("log dir %s is offline: %s failed: %s", log_dir, what, error)

    def take_dir_offline(self, log_dir: str) -> list[TopicPartition]:
        """Close the logs of an offline dir without writing anything (no checkpoint,
        no marker, no trim) and drop them from the live set; -> their partitions."""
        log_dir = os.path.abspath(log_dir)
        with self._offline_lock:
            self.offline_dirs.setdefault(log_dir, "taken offline")
        gone = sorted(tp for tp, d in self._dir_of.items() if d == log_dir)
        for tp in gone:
            plog = self.logs.pop(tp)
            del self._dir_of[tp]
            try:
                plog.release()
            except OSError as e:     # munmap does not write; nothing else to do
                logger.warning("%s: releasing its files: %s", plog.dir, e)
        return gone

    def _adopt(self, tp: TopicPartition, plog: PartitionLog, log_dir: str) -> None:
        plog.failure_sink = self.report_failure
        plog.flush_observer = self._flush_observer
        self.logs[tp] = plog
        self._dir_of[tp] = log_dir

    # -- startup / shutdown ---------------------------------------------------------

    def startup(self, broker_id: int | None = None, cluster_id: str | None = None) -> None:
        """Load every usable log dir (the module docstring's steps). A dir failing a
        step with an OSError is offline from the start; NoLiveLogDirError when no
        dir is left. InconsistentMetaPropertiesError still stops everything."""
        for log_dir in self.log_dirs:
            self._startup_step(log_dir, "creating and probing the log dir", _create_and_probe)
        self._settle_future_dirs()
        for log_dir in self.live_log_dirs:
            self._startup_step(log_dir, "loading the log dir",
                               lambda d: self._load_checked(d, broker_id, cluster_id))
        if not self.live_log_dirs:
            raise NoLiveLogDirError(
                "none of the log dirs " + ", ".join(self.log_dirs) + " can be used: "
                + "; ".join(f"{d}: {why}" for d, why in self.offline_dirs.items()))

    def _startup_step(self, log_dir: str, what: str, step: Callable[[str], None]) -> None:
        if log_dir in self.offline_dirs:
            return
        try:
            step(log_dir)
        except OSError as e:
            self.report_failure(log_dir, what, e)
            self.take_dir_offline(log_dir)

    def _load_checked(self, log_dir: str, broker_id: int | None, cluster_id: str | None) -> None:
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
            if log.last_load is not None and log.last_load.truncated_bytes:
                logger.warning("%s: recovery cut %d bytes of torn or invalid data", path,
                               log.last_load.truncated_bytes)
            self._adopt(tp, log, log_dir)

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown
        marker: in live dirs only. A log whose dir is offline, or fails now, is
        released without writes, and its dir gets no marker (recovered next start)."""
        for plog in list(self.logs.values()):
            try:
                plog.flush()
                plog.close()
            except OSError:          # reported by the log's guard: its dir is offline
                plog.release()
        self.checkpoint_all()
        for log_dir in self.live_log_dirs:
            try:
                checkpoints.write_lines_atomically(
                    os.path.join(log_dir, filenames.CLEAN_SHUTDOWN), [])
            except OSError as e:
                self.report_failure(log_dir, "writing the clean-shutdown marker", e)
        self.logs.clear()
        self._dir_of.clear()

    # -- logs -------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def __iter__(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self.logs.items()))

    def get_or_create_log(self, topic: str, partition: int, *, config: LogConfig | None = None,
                          topic_id: str | None = None, is_new: bool = False) -> PartitionLog:
        """The log of (topic, partition), created in the live log dir holding fewest logs.

        KIP-112: while a log dir is offline, a partition that is not new (the
        controller created it before: LeaderAndIsr is_new false) and is in no live
        dir may well be in the offline one, so LogDirOfflineError is raised rather
        than an empty log created (which would lose its data on the next leader
        change). LogDirOfflineError too when no dir is live."""
        tp = (topic, partition)
        log = self.logs.get(tp)
        if log is None:
            live = self.live_log_dirs
            if (self.offline_dirs and not is_new) or not live:
                raise LogDirOfflineError(
                    f"cannot create the log of {topic}-{partition}: log dirs "
                    f"{', '.join(sorted(self.offline_dirs))} are offline")
            counts = {d: 0 for d in live}
            for d in self._dir_of.values():
                if d in counts:
                    counts[d] += 1
            log_dir = min(live, key=lambda d: counts[d])
            path = os.path.join(log_dir, filenames.partition_dir_name(topic, partition))
            try:
                log = PartitionLog.open(path, config or self.topic_config(topic), clock=self.clock)
            except OSError as e:
                self.report_failure(log_dir, f"creating the log of {topic}-{partition}", e)
                raise
            self._defer_sync(log_dir)
            self._adopt(tp, log, log_dir)
        if topic_id is not None and log.read_partition_metadata() != topic_id:
            log.write_partition_metadata(topic_id, sync=False)
            self._defer_sync(os.path.join(log.dir, filenames.PARTITION_METADATA), log.dir)
        return log

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log, rename its dir to ``<tp>.<uuid>-delete``, then remove it
        and rewrite the checkpoints: ``detach_log`` then ``purge_deleted``."""
        doomed = self.detach_log(topic, partition)
        if doomed is None:
            return False
        self.purge_deleted([doomed])
        return True

    def detach_log(self, topic: str, partition: int) -> str | None:
        """Close the log and rename its dir to ``<tp>.<uuid>-delete``: from
        here the partition's name is free for a new log, and a restart removes the
        renamed dir. -> that dir, or None when there is no such log. The slow rest
        (removing the files, rewriting the checkpoints without the log) is
        ``purge_deleted``, which any thread may run later, as Kafka deletes
        ``-delete`` dirs in the background (file.delete.delay.ms). The rename is
        made durable by the next checkpoint (``sync_deferred``); Kafka does not
        fsync it at all (LocalLog.renameDir)."""
        tp = (topic, partition)
        log = self.logs.pop(tp, None)
        if log is None:
            return None
        log_dir = self._dir_of.pop(tp)
        doomed = os.path.join(os.path.dirname(log.dir), filenames.delete_dir_name(
            topic, partition, uuid.uuid4().hex))
        try:
            log.close(snapshot=False)                  # its producer state dies with it
            os.replace(log.dir, doomed)
        except OSError as e:
            self.report_failure(log_dir, f"deleting the log of {topic}-{partition}", e)
            log.release()
            raise
        self._defer_sync(log_dir)
        return doomed

    def purge_deleted(self, doomed: list[str]) -> None:
        """Remove detached log dirs and rewrite the checkpoints without them. Any
        thread: the checkpoint writes are serialised (``_write``)."""
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
        self.checkpoint_all()

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
        if target in self.offline_dirs:
            raise LogDirOfflineError(f"log dir {target} is offline")
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
            doomed = os.path.join(source, filenames.delete_dir_name(topic, partition, tag))
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
        anywhere, else renamed to ``<tp>`` (its old dir was already retired).
        Only live dirs count (an offline dir is not listed)."""
        live: set[str] = set()
        for log_dir in self.live_log_dirs:
            self._startup_step(log_dir, "listing the log dir", lambda d: live.update(
                name for name in os.listdir(d) if os.path.isdir(os.path.join(d, name))))
        for log_dir in self.live_log_dirs:
            self._startup_step(log_dir, "settling replica moves",
                               lambda d: _settle_future_dir(d, live))

    # -- periodic work (the broker schedules these) -----------------------------------

    def flush_dirty_logs(self) -> int:
        """Apply each log's flush policy; logs flushed. (A log whose dir fails is
        skipped: its guard reported the dir.)"""
        return sum(1 for _, log in self if _or_zero(log.maybe_flush))

    def cleanup_logs(self) -> int:
        """Retention over every log; segments deleted."""
        return sum(_or_zero(log.delete_old_segments) for _, log in self)

    def checkpoint_all(self) -> None:
        self.checkpoint_recovery_points()
        self.checkpoint_high_watermarks()
        self.checkpoint_log_start_offsets()

    def _write(self, name: str, value: Callable[[PartitionLog], int | None]) -> None:
        """Write checkpoint ``name`` in every live dir; a dir whose write fails goes
        offline (the others are still written). Any thread (the broker writes its
        periodic checkpoints and a deletion's in worker threads, so that their
        fsyncs never stall the event loop): one writer at a time, since every write
        goes through the same ``<name>.tmp``; the offsets are read at write time."""
        with self._checkpoint_lock:
            self.sync_deferred()
            self._write_locked(name, value)

    # -- deferred fsyncs ---------------------------------------------------------------

    def _defer_sync(self, *paths: str) -> None:
        with self._unsynced_lock:
            self._unsynced.update(paths)

    def sync_deferred(self) -> None:
        """fsync what log creation, deletion and topic-id writes left unsynced: files
        first, then directories, deepest first. Any thread; every checkpoint write
        calls it first, so a checkpoint never names a log whose directory is not
        durable, and the broker's checkpoints run every few seconds in a worker
        thread. Why deferred: these fsyncs ran on the event loop (py-spy under the
        fuzzer's topic churn: ~4% of the loop's time, in fsyncs of up to tens of
        ms each); a process crash (kill -9) loses nothing unsynced, only an OS
        crash can, and then at most the last seconds' creations and deletions,
        which the controller's next LeaderAndIsr / StopReplica redoes. Kafka does
        likewise: partition.metadata is flushed on its scheduler and a deleted
        log's rename is not fsync'd. A path gone meanwhile (deleted) is skipped."""
        with self._unsynced_lock:
            if not self._unsynced:
                return
            paths, self._unsynced = self._unsynced, set()
        for path in sorted(paths, key=lambda p: (os.path.isdir(p), -p.count(os.sep))):
            try:
                checkpoints.fsync_path(path)
            except FileNotFoundError:
                continue
            except OSError as e:
                self.report_failure(self._log_dir_holding(path), f"fsync of {path}", e)

    def _log_dir_holding(self, path: str) -> str:
        path = os.path.abspath(path)
        for log_dir in self.log_dirs:
            if path == log_dir or path.startswith(log_dir + os.sep):
                return log_dir
        return path

    def _write_locked(self, name: str, value: Callable[[PartitionLog], int | None]) -> None:
        for log_dir in self.live_log_dirs:
            entries = {}
            for tp, log in list(self.logs.items()):
                if self._dir_of.get(tp) == log_dir:
                    offset = value(log)
                    if offset is not None:
                        entries[tp] = offset
            try:
                checkpoints.write_offsets(os.path.join(log_dir, name), entries)
            except OSError as e:
                self.report_failure(log_dir, f"writing {name}", e)

    def checkpoint_recovery_points(self) -> None:
        self._write(filenames.RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_high_watermarks(self) -> None:
        self._write(filenames.REPLICATION_CHECKPOINT, lambda log: log.high_watermark)

    def checkpoint_log_start_offsets(self) -> None:
        # Kafka writes only logs whose start offset is above their first segment's base.
        self._write(filenames.LOG_START_CHECKPOINT,
                    lambda log: log.log_start_offset
                    if log.log_start_offset > log.segments[0].base_offset else None)


def _or_zero(step: Callable[[], int | bool]) -> int:
    """``step()`` as a count; 0 when it raised an OSError (its log's guard has
    reported the dir, which is going offline)."""
    try:
        return int(step())
    except OSError:
        return 0


def _create_and_probe(log_dir: str) -> None:
    """Create the dir if needed and check it takes a write: a probe file written,
    fsync'd and removed (a read-only or failed file system, or a full one, fails)."""
    os.makedirs(log_dir, exist_ok=True)
    probe = os.path.join(log_dir, PROBE_FILE)
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"probe\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.unlink(probe)


def _settle_future_dir(log_dir: str, live: set[str]) -> None:
    """``_settle_future_dirs`` for one dir; ``live`` holds the partition dir names
    of every live dir (updated as futures are promoted)."""
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


def _reopen_in_place(log: PartitionLog, path: str) -> None:
    """Open the (closed) log's files again from ``path`` into the same object,
    keeping its lock and its in-memory offsets (high watermark, log start,
    recovery point) and its failure sink (a class default the fresh one lacks)."""
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
