"""Shared file mappings that keep no file descriptor (mmap(2) through ctypes).

CPython 3.11's ``mmap.mmap`` dup()s the file descriptor and holds the copy
until the map is closed (3.13 added ``trackfd=False``). A broker keeps two
index maps open per partition, so 10,000 partitions cost 20,000 descriptors
for the maps alone, which is this machine's hard RLIMIT_NOFILE. mmap(2) itself
needs no descriptor once the mapping exists (the JVM's MappedByteBuffer, which
Kafka's indexes use, keeps none), so this maps with libc directly and the
caller closes its descriptor right away.

The one danger: touching the buffer after ``close`` (munmap) is a segfault,
not a ValueError. ``buffer`` must therefore never escape its owner — the
owner reads and writes through ``struct.unpack_from``/``pack_into`` and hands
out copies (tuples, bytes) only, and drops ``buffer`` before unmapping.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.msync.restype = ctypes.c_int
_libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

MAP_FAILED = ctypes.c_void_p(-1).value
MS_SYNC = 4   # Linux <sys/mman.h>


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class FdlessMap:
    """``length`` bytes of the file behind ``fd`` from offset 0, MAP_SHARED.

    ``buffer`` supports the buffer protocol, for ``struct.pack_into``/
    ``unpack_from``; a read-only map's buffer is a read-only memoryview, so a
    stray write raises TypeError instead of faulting on a PROT_READ page. ``fd`` may be closed as soon as this
    returns. ``length`` must be > 0, and pages past the end of the file must
    not be touched (SIGBUS), as with any mapping.
    """

    __slots__ = ("_addr", "buffer", "length")

    def __init__(self, fd: int, length: int, *, writable: bool) -> None:
        if length <= 0:
            raise ValueError(f"cannot map {length} bytes")
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        addr = _libc.mmap(None, length, prot, mmap.MAP_SHARED, fd, 0)
        if addr == MAP_FAILED or addr is None:
            err = ctypes.get_errno()
            raise OSError(err, f"mmap of {length} bytes: {os.strerror(err)}")
        self._addr: int = addr
        self.length = length
        array = (ctypes.c_char * length).from_address(addr)
        self.buffer: ctypes.Array[ctypes.c_char] | memoryview | None = (
            array if writable else memoryview(array).cast("B").toreadonly())

    def __len__(self) -> int:
        return self.length

    def flush(self) -> None:
        """msync(MS_SYNC): the dirty pages reach the file."""
        if self.buffer is not None:
            _check(_libc.msync(self._addr, self.length, MS_SYNC), "msync")

    def close(self) -> None:
        """Unmap (idempotent). The buffer is dropped first, so a later use of
        this object fails with TypeError/AttributeError instead of touching freed pages."""
        if self.buffer is None:
            return
        if isinstance(self.buffer, memoryview):
            self.buffer.release()
        self.buffer = None
        _check(_libc.munmap(self._addr, self.length), "munmap")

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, AttributeError):
            pass
