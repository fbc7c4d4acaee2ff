"""gzip batch bodies inflated by libdeflate, through ctypes, straight into the caller's buffer.

Inflating is most of the bulk replay's work (gzip is the codec most clients
use). libdeflate - a system library (``libdeflate.so.0``, Debian package
``libdeflate0``), not a Python package - inflates about twice as fast as zlib
and writes where it is told, so each batch of a run lands in its place in the
run's one buffer (no join). When the library is not there, ``available()`` is
False and callers use zlib; the output is the same either way.

Only exactly one complete, valid gzip member is accepted (libdeflate checks
the CRC-32 and ISIZE of the trailer); anything else - several members, bytes
after the member, a body larger than the room given - returns None and the
caller takes the general path (protocol.compression), which decides between
decoding and an error exactly as the rest of the project does.

    gzip member (RFC 1952): 1f 8b 08 FLG MTIME(4) XFL OS [extra, name, comment, hcrc]
                            deflate data, CRC32 (4, little-endian), ISIZE (4, little-endian)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from typing import Any

SUCCESS = 0           # enum libdeflate_result (1 BAD_DATA, 2 SHORT_OUTPUT, 3 INSUFFICIENT_SPACE)
_local = threading.local()   # one decompressor per thread (they are not thread-safe)


@functools.cache
def _library() -> Any | None:
    name = ctypes.util.find_library("deflate") or "libdeflate.so.0"
    try:
        lib = ctypes.CDLL(name)     # CDLL: the GIL is released during each call
    except OSError:
        return None
    size_p = ctypes.POINTER(ctypes.c_size_t)
    lib.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
    lib.libdeflate_alloc_decompressor.argtypes = []
    lib.libdeflate_gzip_decompress_ex.restype = ctypes.c_int
    lib.libdeflate_gzip_decompress_ex.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
        size_p, size_p]
    return lib


def available() -> bool:
    return _library() is not None


def _decompressor(lib: Any) -> int:
    d = getattr(_local, "decompressor", None)
    if d is None:
        d = lib.libdeflate_alloc_decompressor()
        if not d:
            raise MemoryError("libdeflate_alloc_decompressor failed")
        _local.decompressor = d    # kept for the thread's life (one per Spark worker)
    return int(d)


def gunzip_into(src: int, src_len: int, dst: int, room: int) -> int | None:
    """Inflate the gzip member at address ``src`` (``src_len`` bytes) into ``dst``
    (at most ``room`` bytes) -> bytes written, or None when the input is not exactly
    one valid member that fits (or libdeflate is not available)."""
    lib = _library()
    if lib is None:
        return None
    used_in, used_out = ctypes.c_size_t(), ctypes.c_size_t()
    result = lib.libdeflate_gzip_decompress_ex(_decompressor(lib), src, src_len, dst, room,
                                               ctypes.byref(used_in), ctypes.byref(used_out))
    if result != SUCCESS or used_in.value != src_len:
        return None
    return int(used_out.value)
