"""The sparse offset index of a segment (``.index``, Kafka ``OffsetIndex``).

Entry layout, 8 bytes, big-endian::

    relativeOffset  int32   offset - segment base offset
    position        int32   byte position in the .log of a batch whose last
                            offset is relativeOffset + base

One entry per ``log.index.interval.bytes`` of appended batches; lookups find
the largest indexed offset <= target and scan batch headers forward from its
position.
"""

from __future__ import annotations

import struct

from storage.mmap_index import CorruptIndexError, MmapIndex

OFFSET, POSITION = 0, 1


class OffsetIndex(MmapIndex):
    ENTRY = struct.Struct(">iI")
    SUFFIX = ".index"

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= ``offset``.

        (base_offset, 0) when the index is empty or ``offset`` precedes every entry.
        """
        slot = self.largest_lower_bound_slot(offset - self.base_offset, OFFSET)
        if slot < 0:
            return self.base_offset, 0
        rel, pos = self.entry(slot)
        return self.base_offset + rel, pos

    def last_offset(self) -> int:
        last = self.last_entry()
        return self.base_offset if last is None else self.base_offset + last[OFFSET]

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); offsets must increase strictly."""
        rel = offset - self.base_offset
        last = self.last_entry()
        if last is not None and rel <= last[OFFSET]:
            raise ValueError(f"index offset {offset} is not above the last entry "
                             f"{self.base_offset + last[OFFSET]}")
        if not 0 <= rel <= 0x7FFFFFFF:
            raise ValueError(f"offset {offset} is out of range for base {self.base_offset}")
        self._put(rel, position)

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        self.truncate_at(offset - self.base_offset, OFFSET)

    def sanity_check(self, log_size: int) -> None:
        """Whole entries; the first and last entries inside the segment; positions in the log."""
        self.check_file_length()
        if not self.entries:
            return
        first, last = self.entry(0), self.entry(self.entries - 1)
        if first[OFFSET] < 0 or last[OFFSET] < first[OFFSET]:
            raise CorruptIndexError(f"index {self.path}: entries out of order "
                                    f"(first {first}, last {last})")
        if last[POSITION] >= max(log_size, 1) or last[POSITION] < first[POSITION]:
            raise CorruptIndexError(f"index {self.path}: position {last[POSITION]} "
                                    f"beyond log size {log_size}")
