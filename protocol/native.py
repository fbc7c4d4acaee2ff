"""The project's C extensions (setup.py), loaded where they were built.

Each is optional: ``extension(name)`` is ``protocol.<name>`` when the install built it,
None when it did not (no compiler or headers at install time), and its pure-Python
reference runs instead. ``wanted()`` is False when ``PYBROKER_NATIVE=0`` asks for the
references everywhere (benchmarks and tests of the fallback).

    protocol/_record_walk.c    record_validation's record walk
    protocol/_gzip_members.c   compression's bounded gzip reader
    protocol/_frame_body.c     framing's large frame bodies, received into their own bytes
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def extension(name: str) -> ModuleType | None:
    """protocol.<name> as built by setup.py, or None when it was not built."""
    try:
        return importlib.import_module(f"protocol.{name}")
    except ImportError:
        return None


def wanted() -> bool:
    """Whether the C paths are asked for (PYBROKER_NATIVE is not 0)."""
    return os.environ.get("PYBROKER_NATIVE", "1") != "0"
