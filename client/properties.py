"""Java properties files, as Kafka's tools read their ``--command-config``.

``parse_properties`` follows java.util.Properties.load: ``#``/``!`` comment lines;
``key=value``, ``key: value`` or ``key value``; a line ending in an odd number of
``\\`` continues on the next one, whose leading blanks are dropped; the escapes
``\\t \\n \\r \\f \\uXXXX`` and ``\\<char>`` (so ``\\=`` and ``\\:`` in a key). A later
key wins. ``load_client_properties`` reads a file (``client.security`` re-exports it).
(broker/config.py has its own reader for server.properties; client/ may not import it.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["load_client_properties", "parse_properties"]


def load_client_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """A Kafka client properties file (``--command-config``) as a dict.

    UTF-8 (Java reads these files as ISO-8859-1; a file that is not UTF-8 is read
    that way too). ValueError when the file cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read client properties {os.fspath(path)!r}: "
                         f"{e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties text -> dict: ``#``/``!`` comments, ``key=value``,
    ``key: value`` or ``key value``, ``\\`` line continuations (the next line's
    leading blanks dropped) and the escapes ``\\t \\n \\r \\f \\uXXXX \\<char>``.
    A later key wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_entry(line)
        props[_unescape(key)] = _unescape(value)
    return props


_BLANK = " \t\f"


def _logical_lines(text: str) -> Iterator[str]:
    pending: str | None = None
    for physical in re.split(r"\r\n|\r|\n", text):
        line = physical.lstrip(_BLANK)
        if pending is None and (not line or line[0] in "#!"):
            continue
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _split_entry(line: str) -> tuple[str, str]:
    """(raw key, raw value): the key ends at the first unescaped ``=``, ``:`` or
    blank; then blanks, at most one ``=``/``:``, and blanks are skipped."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=:" or c in _BLANK:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uXXXX escape in properties: {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)

