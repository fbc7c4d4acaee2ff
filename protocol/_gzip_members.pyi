# Types of protocol/_gzip_members.c (the C gzip reader; see protocol/compression.py).
from typing import Any

RELEASE_GIL_BYTES: int
CORRUPT: int
TOO_LARGE: int

def inflate(data: Any, max_size: int, release_above: int = ..., /) -> bytes | tuple[int, str]: ...
