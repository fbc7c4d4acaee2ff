"""Leader-epoch cache of a partition (KIP-101/279; Kafka ``LeaderEpochFileCache``).

An ordered list of (epoch, start offset): the first offset written under each
leader epoch. Both columns increase strictly. Persisted to
``leader-epoch-checkpoint`` (see ``storage.checkpoints``) on every change.
Followers ask the leader "where does my epoch end?" (OffsetForLeaderEpoch,
``end_offset_for``) and truncate there instead of at their high watermark.

Durability. ``truncate_from_end`` and ``clear`` write the file with fsync.
``truncate_from_start`` (the log start moved: retention, DeleteRecords) writes it
without fsync and marks it unsynced, as Kafka 3.7 does (KAFKA-15046): a lost write
leaves older entries below the log start, which answer nothing. ``assign`` (on
the append path: the first batch of every new epoch, on the leader and on each
follower) writes it without fsync and marks the cache unsynced; ``sync`` makes
it durable, and the log calls it before its recovery point moves
(``PartitionLog.flush``). Invariant: every entry not yet synced starts at or
above the recovery point, and recovery after a crash re-reads the epochs of all
batches from the recovery point on, so a lost unsynced write is rebuilt. Kafka
fsyncs in ``assign`` (KAFKA-16541 keeps it synchronous), which costs one of its
many request threads; here it stalled the one event loop for two fsyncs (up to
~45 ms each under write load) on the first append of each partition after a
leader change.
"""

from __future__ import annotations

import bisect
import os

from storage import checkpoints, filenames

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, dir_path: str) -> None:
        self.path = os.path.join(dir_path, filenames.LEADER_EPOCH_CHECKPOINT)
        try:
            entries = checkpoints.read_epochs(self.path)
        except checkpoints.CheckpointError:
            entries = []  # Kafka rebuilds from the log going forward; an empty cache is safe
        self._epochs = [e for e, _ in entries]
        self._offsets = [o for _, o in entries]
        self._unsynced = False   # the file holds entries not yet fsync'd (see module doc)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True when the cache changed.

        A new entry first removes every entry with an epoch >= ``epoch`` or a
        start offset >= ``start_offset``, keeping both columns monotonic.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._offsets[-1]:
            return False
        keep = len(self._epochs)
        while keep and (self._epochs[keep - 1] >= epoch or self._offsets[keep - 1] >= start_offset):
            keep -= 1
        del self._epochs[keep:], self._offsets[keep:]
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        self._flush(sync=False)
        return True

    def sync(self) -> None:
        """Make the last written checkpoint durable (no-op when it already is)."""
        if self._unsynced and os.path.exists(self.path):
            checkpoints.sync_file(self.path)
        self._unsynced = False

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for ``epoch``.

        The end offset is the start offset of the first epoch above ``epoch``
        (the log end offset when ``epoch`` is the latest), paired with the
        largest known epoch <= ``epoch``. (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        for an undefined or future epoch; (epoch, start of the earliest epoch)
        when ``epoch`` precedes every entry.
        """
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)  # first slot with epoch > requested
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return epoch, self._offsets[0]
        return self._epochs[higher - 1], self._offsets[higher]

    def epoch_for_offset(self, offset: int) -> int:
        """Epoch under which ``offset`` was written, or UNDEFINED_EPOCH."""
        slot = bisect.bisect_right(self._offsets, offset) - 1
        return self._epochs[slot] if slot >= 0 else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (log truncated there)."""
        keep = bisect.bisect_left(self._offsets, end_offset)
        if keep < len(self._offsets):
            del self._epochs[keep:], self._offsets[keep:]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Log start moved to ``start_offset``: drop older epochs, keeping the one
        covering ``start_offset`` with its start moved up to it."""
        covering = bisect.bisect_right(self._offsets, start_offset) - 1
        if covering < 0 or (covering == 0 and self._offsets[0] == start_offset):
            return
        del self._epochs[:covering], self._offsets[:covering]
        self._offsets[0] = start_offset
        self._flush(sync=False)

    def clear(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self._flush()

    def _flush(self, sync: bool = True) -> None:
        if os.path.isdir(os.path.dirname(self.path)):
            checkpoints.write_epochs(self.path, self.entries(), sync)
            self._unsynced = not sync
