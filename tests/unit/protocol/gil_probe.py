"""Whether a C call lets go of the GIL while it reads a buffer, for the native tests
(test_record_walk_native.py, test_gzip_native.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def runs_beside(call: Callable[[bytearray], object], body: bytearray, tries: int,
                expected: type[Exception]) -> bool:
    """Whether this thread ran Python while another thread ran ``call(body)`` up to
    ``tries`` times: resizing a bytearray fails (BufferError) exactly while a call holds
    its buffer, and that call holds the GIL throughout unless it lets go of it.
    ``expected`` is what a call may raise when it ran while this thread had a byte
    appended."""
    done, seen = threading.Event(), threading.Event()

    def calls() -> None:
        for _ in range(tries):
            if seen.is_set():
                break
            try:
                call(body)
            except expected:
                pass
        done.set()

    thread = threading.Thread(target=calls)
    thread.start()
    try:
        while not done.is_set() and not seen.is_set():
            try:
                body.append(0)
                body.pop()
            except BufferError:
                seen.set()
    finally:
        thread.join()
    return seen.is_set()
