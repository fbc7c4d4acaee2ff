"""Fixed-width, sorted, memory-mapped index files (Kafka ``AbstractIndex``).

An index of the active segment is preallocated (sparse ``ftruncate``) to
``segment.index.bytes`` rounded down to whole entries and mapped read-write;
``entries`` counts the valid ones and everything past them is meaningless.
``trim`` cuts the file to ``entries * entry_size`` when the segment is rolled
or closed, so after a clean shutdown the file length gives the entry count.
Indexes of older segments are opened read-only, lazily, by the segment.
The maps keep no file descriptor (``storage.fdless_mmap``): ``_mm`` is the
mapped buffer and never leaves this class (entries are returned as tuples).

Writes go through the map, except the first entry on each page the file does
not hold yet (a hole of the sparse file): that one is written with pwrite(2)
on a briefly opened descriptor. The first write fault on a hole page of a
shared file mapping cost ~2 ms here, and up to ~45 ms while ext4 was busy with
the writes of 1,000 partitions, all on the event loop (it was the 5th produce
to every new partition, when its first index entry was written: ~90 ms per
acks=all produce, leader and followers each stalling); a pwrite that fills the
same page costs ~0.02 ms, and later writes through the map to the cached page
cost microseconds.

Invariant: both fields of an entry increase strictly with the slot, so one
binary search serves lookups by either field.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any, ClassVar

from storage.fdless_mmap import FdlessMap


class CorruptIndexError(Exception):
    """An index file fails its sanity check; the caller rebuilds it from the log."""


class MmapIndex:
    ENTRY: ClassVar[struct.Struct]
    SUFFIX: ClassVar[str]

    def __init__(self, path: str, base_offset: int, max_index_size: int, *, writable: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        size = self.ENTRY.size
        self.max_entries = max(1, max_index_size // size)
        self.writable = writable
        self._map: FdlessMap | None = None
        self._mm: Any = None      # the map's buffer, for struct's pack_into/unpack_from
        fd = os.open(path, (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY, 0o644)
        try:
            length = os.fstat(fd).st_size
            self.entries = min(length // size, self.max_entries)
            if writable:
                os.ftruncate(fd, self.max_entries * size)
                self._set_map(FdlessMap(fd, self.max_entries * size, writable=True))
            elif self.entries:
                self._set_map(FdlessMap(fd, self.entries * size, writable=False))
        finally:
            os.close(fd)
        self._length_on_open = length
        # bytes from the start known to be on pages this object wrote with pwrite (or
        # later); 0 at open: a preallocated file's length says nothing about its
        # holes, and a pwrite over a written page is merely an ordinary write
        self._backed_until = 0

    def _set_map(self, mapping: FdlessMap | None) -> None:
        if self._map is not None:
            self._mm = None
            self._map.close()
        self._map = mapping
        self._mm = None if mapping is None else mapping.buffer

    # -- reading ------------------------------------------------------------------

    def entry(self, slot: int) -> tuple[int, ...]:
        assert self._mm is not None
        return self.ENTRY.unpack_from(self._mm, slot * self.ENTRY.size)

    def last_entry(self) -> tuple[int, ...] | None:
        return self.entry(self.entries - 1) if self.entries else None

    def largest_lower_bound_slot(self, target: int, field: int) -> int:
        """Largest slot whose ``field`` is <= ``target``.

        -1 when the index is empty or every entry's field is above ``target``
        (then the caller starts from the beginning of the segment).
        """
        lo, hi = 0, self.entries - 1
        if hi < 0 or self.entry(0)[field] > target:
            return -1
        unpack, mm, width = self.ENTRY.unpack_from, self._mm, self.ENTRY.size
        while lo < hi:  # invariant: entry(lo)[field] <= target
            mid = (lo + hi + 1) >> 1
            if unpack(mm, mid * width)[field] <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def smallest_upper_bound_slot(self, target: int, field: int) -> int:
        """Smallest slot whose ``field`` is >= ``target``; -1 when none is."""
        slot = self.largest_lower_bound_slot(target - 1, field)
        return slot + 1 if slot + 1 < self.entries else -1

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.ENTRY.size

    # -- writing ------------------------------------------------------------------

    def _put(self, *fields: int) -> None:
        if not self.writable or self._mm is None:
            raise ValueError(f"index {self.path} is not writable")
        if self.is_full:
            raise ValueError(f"index {self.path} is full")
        self._write_entry(fields)

    def _write_entry(self, fields: tuple[int, ...]) -> None:
        """Write the next entry (the caller checked room and writability)."""
        pos = self.entries * self.ENTRY.size
        end = pos + self.ENTRY.size
        if end > self._backed_until:
            # first entry on a hole page: pwrite fills it (see the module docstring)
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.pwrite(fd, self.ENTRY.pack(*fields), pos)
            finally:
                os.close(fd)
            self._backed_until = _round_up(end, mmap.PAGESIZE)
        else:
            self.ENTRY.pack_into(self._mm, pos, *fields)
        self.entries += 1

    def truncate_to_slot(self, slots: int) -> None:
        """Keep the first ``slots`` entries."""
        self.entries = max(0, min(slots, self.entries))

    def truncate_at(self, target: int, field: int) -> None:
        """Drop every entry whose ``field`` is >= ``target``."""
        self.truncate_to_slot(self.largest_lower_bound_slot(target - 1, field) + 1)

    def reset(self) -> None:
        self.entries = 0

    def flush(self) -> None:
        if self._map is not None and self.writable:
            self._map.flush()

    def trim(self) -> None:
        """Close the mapping and cut the file to the valid entries."""
        self.close(trim=True)

    def close(self, trim: bool = True) -> None:
        self._set_map(None)
        if self.writable and trim:
            os.truncate(self.path, self.size_in_bytes)
        self.writable = False

    def reopen_read_only(self) -> None:
        """After ``trim``: map the trimmed file read-only."""
        if self._mm is None and self.entries:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                self._set_map(FdlessMap(fd, self.entries * self.ENTRY.size, writable=False))
            finally:
                os.close(fd)

    def check_file_length(self) -> None:
        """A read-only index must be whole entries (Kafka's sanity check)."""
        if not self.writable and self._length_on_open % self.ENTRY.size:
            raise CorruptIndexError(
                f"index {self.path} has length {self._length_on_open}, not a multiple of "
                f"{self.ENTRY.size}")


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit
