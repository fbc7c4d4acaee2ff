# Types of protocol/_record_walk.c (the C record walk; see protocol/record_validation.py).
from typing import Any

RELEASE_GIL_RECORDS: int

def walk(body: Any, count: int, want_stamps: bool,
         release_above: int = ..., /) -> tuple[list[int], list[int] | None]: ...
