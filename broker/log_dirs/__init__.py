"""Log dir failures (KIP-112, ZooKeeper mode): a failed disk takes one log dir
offline, not the broker.

Map (Kafka's class in brackets):

    failure_channel.py  LogDirFailureChannel: the one queue of failed dirs; any thread
                        reports, one task on the event loop consumes [LogDirFailureChannel]
    offline.py          LogDirFailureHandler: what a failed dir means for this broker --
                        its partitions offline (KAFKA_STORAGE_ERROR), its logs closed
                        without writes, the controller told through ZooKeeper, the
                        broker shut down when no dir is left
                        [ReplicaManager.handleLogDirFailure, LogManager.handleLogDirFailure]

The flow, end to end:

1. Detection, in storage: every write path of a log (storage/io_guard.py) and the
   LogManager's own writes (checkpoints, markers, log creation, start-up) turn an
   OSError into ``LogManager.report_failure``: the dir is offline at once (its logs
   refuse writes, no checkpoint or clean-shutdown marker is written there again)
   and the LogManager's ``on_dir_failure`` -- this channel -- is told.
2. The channel queues the dir once; its consumer runs the handler (offline.py).
3. The controller (controller/log_dir_events.py) reads the notification, asks the
   broker about all its partitions with LeaderAndIsr, gets KAFKA_STORAGE_ERROR for
   the offline ones, marks those replicas offline, elects other leaders and
   publishes them as offline_replicas in UpdateMetadata.
4. The dir stays offline until the broker restarts; then it is loaded (and
   recovered: it never got the clean-shutdown marker) like any other.
"""

from broker.log_dirs.failure_channel import LogDirFailureChannel
from broker.log_dirs.offline import LogDirFailureHandler

__all__ = ["LogDirFailureChannel", "LogDirFailureHandler"]
