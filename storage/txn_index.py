"""A segment's ``.txnindex``: the aborted transactions whose data lies in the
segment, as Kafka's TransactionIndex keeps them (same file, same layout).

File layout: fixed 34-byte entries in append order, big-endian (``AbortedTxn``)::

    version: int16 (0) | producerId: int64 | firstOffset: int64 |
    lastOffset: int64 (the abort marker's offset) | lastStableOffset: int64

Invariants: entries are appended in increasing ``lastOffset`` (the order the
abort markers are written); the file holds only whole entries (a torn tail from
a crash is cut off on open). ``collect(fetch_offset, upper)`` answers a
read_committed Fetch: the aborted transactions that overlap [fetch_offset,
upper), and whether the search can stop here (an entry whose LSO is at or past
``upper`` proves no later segment holds a relevant abort).

Plain file I/O (``os.pread``/``os.write``, appends only); the file is created on
the first append, as Kafka opens it lazily. Not driven by ``log.py`` yet: the
partition side of transactions (issue 14) wires it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size               # 34
CURRENT_VERSION = 0


class CorruptTxnIndex(Exception):
    """An entry Kafka would refuse: an unknown version, or offsets out of order."""


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset,
                          self.last_offset, self.last_stable_offset)


def _parse(data: bytes, at: int) -> AbortedTxn:
    version, pid, first, last, lso = ENTRY.unpack_from(data, at)
    if version > CURRENT_VERSION:
        raise CorruptTxnIndex(f"aborted transaction version {version} at byte {at}; "
                              f"{CURRENT_VERSION} is the newest known")
    return AbortedTxn(pid, first, last, lso)


def read_entries(path: str) -> list[AbortedTxn]:
    """Every whole entry of the ``.txnindex`` at ``path``, read-only: a torn tail is
    left alone (TxnIndex cuts it off on open). For tools that look at the files
    (``pybroker dump-log``); CorruptTxnIndex for an entry of an unknown version."""
    with open(path, "rb") as f:
        data = f.read()
    return [_parse(data, at) for at in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE)]


class TxnIndex:
    def __init__(self, path: str, start_offset: int) -> None:
        self.path = path
        self.start_offset = start_offset          # the segment's base offset
        self._size = 0
        self.last_offset: int | None = None
        if os.path.exists(path):
            size = os.path.getsize(path)
            whole = size - size % ENTRY_SIZE
            if whole != size:                     # a torn entry from a crash
                os.truncate(path, whole)
            self._size = whole
            entries = self.entries()
            self.last_offset = entries[-1].last_offset if entries else None

    def append(self, txn: AbortedTxn) -> None:
        if self.last_offset is not None and txn.last_offset <= self.last_offset:
            raise ValueError(f"{self.path}: aborted transactions must be appended in "
                             f"increasing last offset; {txn.last_offset} follows "
                             f"{self.last_offset}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, txn.to_bytes())
        finally:
            os.close(fd)
        self._size += ENTRY_SIZE
        self.last_offset = txn.last_offset

    def entries(self) -> list[AbortedTxn]:
        if self._size == 0:
            return []
        fd = os.open(self.path, os.O_RDONLY)
        try:
            data = os.pread(fd, self._size, 0)
        finally:
            os.close(fd)
        return [_parse(data, at) for at in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE)]

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), and True
        when the search is complete (no later segment needs looking at)."""
        found: list[AbortedTxn] = []
        for txn in self.entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose abort marker is at or after ``offset`` (log truncation)."""
        keep = [t for t in self.entries() if t.last_offset < offset]
        if len(keep) * ENTRY_SIZE == self._size:
            return
        os.truncate(self.path, len(keep) * ENTRY_SIZE)
        self._size = len(keep) * ENTRY_SIZE
        self.last_offset = keep[-1].last_offset if keep else None

    def sanity_check(self) -> None:
        """Kafka's check on open: no entry ends before the segment starts."""
        for txn in self.entries():
            if txn.last_offset < self.start_offset:
                raise CorruptTxnIndex(f"{self.path}: aborted transaction {txn} ends before "
                                      f"the segment's start offset {self.start_offset}")


__all__ = ["ENTRY_SIZE", "AbortedTxn", "CorruptTxnIndex", "TxnIndex", "read_entries"]
