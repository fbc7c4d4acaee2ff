"""The write-path guard of a log: where storage notices that a log dir failed.

Kafka wraps every disk operation of a log in ``maybeHandleIOException``: an
IOException there adds the log's dir to the LogDirFailureChannel and becomes a
KafkaStorageException. Here the same happens in one decorator:

* ``write_path`` wraps each ``PartitionLog`` method that writes (append, roll,
  the offset/time/txn index writes under them, flush/fsync, truncation, segment
  deletion, producer snapshots, the leader-epoch checkpoint, partition.metadata).
  It holds the log's lock, refuses the call with ``LogDirOfflineError`` when the
  log's dir is already offline (nothing touches the disk), and hands any other
  OSError (ENOSPC, EROFS, EIO, EACCES, ...) to the log's ``failure_sink`` before
  re-raising it.
* The sink is the LogManager's (``LogManager.report_failure``): it marks the
  whole dir offline at once -- every log in it refuses writes from then on --
  and tells its owner (the broker's failure channel, broker/log_dirs/), which
  takes the partitions offline. A log without a sink (a tool, a test) just
  raises.

Both errors are OSErrors, so a caller maps them to KAFKA_STORAGE_ERROR (56) the
same way; neither leaves the log with offsets past what reached the file (the
segment restores its in-memory end on a failed append).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

# (log dir, what failed, the error): told of an OSError on a write path
FailureSink = Callable[[str, str, OSError], object]   # its result is ignored

G = TypeVar("G", bound="GuardedLog")     # the log class whose method is guarded
P = ParamSpec("P")
R = TypeVar("R")


class LogDirOfflineError(OSError):
    """A write to a log whose log dir is offline: refused without touching the
    disk (Kafka's KafkaStorageException; KAFKA_STORAGE_ERROR, 56)."""


class GuardedLog(Protocol):
    """What ``write_path`` needs of the log it guards."""

    offline: bool

    @property
    def lock(self) -> AbstractContextManager[object]: ...   # held around every write

    def report_io_error(self, what: str, error: OSError) -> None: ...

    def offline_error(self) -> LogDirOfflineError: ...


def write_path(method: Callable[Concatenate[G, P], R]) -> Callable[Concatenate[G, P], R]:
    """Run ``method`` holding the log's lock; refuse it while the log's dir is
    offline; report an OSError it raises (then let it propagate)."""
    @functools.wraps(method)
    def wrapper(self: G, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if self.offline:
                raise self.offline_error()
            try:
                return method(self, *args, **kwargs)
            except LogDirOfflineError:
                raise
            except OSError as e:
                self.report_io_error(method.__name__, e)
                raise
    return wrapper
