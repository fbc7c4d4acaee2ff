"""CoordinatorPartitions: which partitions of a coordinator's topic this broker
serves, is loading, and the newest leader epoch seen of each -- the bookkeeping
the group coordinator (__consumer_offsets) and the transaction coordinator
(__transaction_state) share. No I/O: the coordinator starts and installs loads.

Rules (as Kafka's coordinators follow LeaderAndIsr):
* a notification with an epoch older than the newest seen is ignored (fencing);
* becoming leader of a partition we serve only records the newer epoch (the
  partition stays served at the epoch it was installed at); of one being loaded,
  moves the load's epoch; otherwise a load must start;
* a load is installed only if the partition is still loading (no resignation
  meanwhile); it is then served at the newest epoch seen;

``owned[p]`` is the coordinator epoch (Kafka's ``coordinatorEpoch``): the leader
epoch the partition was installed at. It changes only with a new load, so work
begun under it (a transaction's markers, a state write) stays valid while this
broker keeps leading, whatever ISR changes bump the leader epoch meanwhile; a
resignation and a new load give a new, higher one. (A leader epoch bump without a
leader change used to replace it, and a transaction's marker task, seeing the
epoch change, gave up as if the partition had moved: the id stayed in
PrepareCommit for good.)
* resigning drops the partition whether it was loading or served.

``partition_for_group(key, n)`` is the key -> partition hash both coordinators use
(Kafka's GroupMetadataManager.partitionFor, TransactionStateManager.partitionFor).
"""

from __future__ import annotations

import functools
import logging

from protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class CoordinatorPartitions:
    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.owned: dict[int, int] = {}      # partition -> coordinator epoch, served (loaded)
        self.loading: dict[int, int] = {}    # partition -> epoch being loaded
        self.epochs: dict[int, int] = {}     # partition -> newest epoch seen

    def status(self, partition: int) -> int | None:
        """COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, or None when served."""
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def become_leader(self, partition: int, epoch: int) -> bool:
        """Record leadership from ``epoch``; True when a load must start now."""
        if epoch < self.epochs.get(partition, -1):
            log.info("%s-%d: leadership at epoch %d ignored, epoch %d is newer", self.topic,
                     partition, epoch, self.epochs[partition])
            return False
        self.epochs[partition] = epoch
        if partition in self.owned:          # still leader, a newer epoch: nothing to reload
            return False
        start = partition not in self.loading
        self.loading[partition] = epoch
        return start

    def resign(self, partition: int, epoch: int | None) -> bool:
        """Drop the partition (``epoch`` None: unconditionally); False when the
        notification is stale and nothing changed."""
        if epoch is not None:
            if epoch < self.epochs.get(partition, -1):
                return False
            self.epochs[partition] = epoch
        self.loading.pop(partition, None)
        self.owned.pop(partition, None)
        return True

    def loaded(self, partition: int, epoch: int) -> bool:
        """A load of ``partition`` finished; True when it is to be installed."""
        if partition not in self.loading:
            return False                     # resigned meanwhile
        del self.loading[partition]
        self.owned[partition] = max(epoch, self.epochs.get(partition, epoch))
        return True

    def all(self) -> list[int]:
        """Every partition served or being loaded."""
        return list(self.owned) + list(self.loading)


@functools.lru_cache(maxsize=1 << 14)   # every group request hashes its group id
def java_string_hash(s: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The partition of a coordinator key (a group id, a transactional id): Kafka's
    Utils.abs(key.hashCode) % partitions (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


__all__ = ["CoordinatorPartitions", "java_string_hash", "partition_for_group"]
