"""The sparse time index of a segment (``.timeindex``, Kafka ``TimeIndex``).

Entry layout, 12 bytes, big-endian::

    timestamp       int64   largest batch max-timestamp seen so far
    relativeOffset  int32   last offset of the batch that held it, minus base

An entry is added at the offset index's cadence and only when the timestamp
grows, so both fields increase strictly.
"""

from __future__ import annotations

import struct

from storage.mmap_index import CorruptIndexError, MmapIndex

TIMESTAMP, OFFSET = 0, 1


class TimeIndex(MmapIndex):
    ENTRY = struct.Struct(">qi")
    SUFFIX = ".timeindex"

    def lookup_below(self, timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp < ``timestamp``.

        Every batch up to that offset has max timestamp < ``timestamp``, so a
        search for the first record at or after ``timestamp`` may start after
        it. (-1, base_offset) when there is no such entry.
        """
        slot = self.largest_lower_bound_slot(timestamp - 1, TIMESTAMP)
        if slot < 0:
            return -1, self.base_offset
        ts, rel = self.entry(slot)
        return ts, self.base_offset + rel

    def last(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base_offset)."""
        last = self.last_entry()
        return (-1, self.base_offset) if last is None else (last[0], self.base_offset + last[1])

    @property
    def is_full(self) -> bool:
        """Full one entry early: the last slot is kept for the entry written on roll."""
        return self.entries >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, *, final: bool = False) -> bool:
        """Add an entry when ``timestamp`` exceeds the last one (and offset grows).

        ``final`` (on roll/close) may use the reserved last slot.
        """
        last = self.last_entry()
        rel = offset - self.base_offset
        if timestamp < 0 or (last is not None and (timestamp <= last[TIMESTAMP] or rel <= last[OFFSET])):
            return False
        if self.entries >= (self.max_entries if final else self.max_entries - 1):
            return False
        if not self.writable or self._mm is None:
            raise ValueError(f"time index {self.path} is not writable")
        self._write_entry((timestamp, rel))
        return True

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        self.truncate_at(offset - self.base_offset, OFFSET)

    def sanity_check(self) -> None:
        self.check_file_length()
        if self.entries and (self.entry(0)[OFFSET] < 0
                             or self.entry(self.entries - 1)[OFFSET] < self.entry(0)[OFFSET]):
            raise CorruptIndexError(f"time index {self.path}: entries out of order")
