"""How the message browser shows a key, a value or a header value (pure).

    None                  -> ("null", "")
    valid UTF-8 whose text is a JSON object or array
                          -> ("json", the JSON pretty-printed, 2-space indent, keys kept in order)
    other valid UTF-8     -> ("text", the text)
    anything else         -> ("hex", "de ad be ef ...", 16 bytes a line)

Shown bytes are capped at MAX_SHOWN_BYTES (the rest summarised as
"... N more bytes"), so a huge record cannot make a huge page. JSON scalars
("42", "true") stay text: only structures gain from pretty-printing.
"""

from __future__ import annotations

import json

MAX_SHOWN_BYTES = 16 * 1024
HEX_LINE = 16


def describe_bytes(data: bytes | bytearray | memoryview | None) -> tuple[str, str]:
    """-> (kind, display text); see the module docstring."""
    if data is None:
        return "null", ""
    raw = bytes(data)
    shown, rest = raw[:MAX_SHOWN_BYTES], len(raw) - min(len(raw), MAX_SHOWN_BYTES)
    suffix = f"\n... {rest} more bytes" if rest else ""
    try:
        text = raw.decode("utf-8") if not rest else shown.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        if rest:                    # the cap may cut a character: judge by the whole value
            try:
                raw.decode("utf-8")
                return "text", shown.decode("utf-8", errors="ignore") + suffix
            except UnicodeDecodeError:
                pass
        return "hex", hex_dump(shown) + suffix
    stripped = text.lstrip()
    if not rest and stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            pass
        else:
            return "json", json.dumps(parsed, indent=2, ensure_ascii=False)
    return "text", text + suffix


def hex_dump(data: bytes) -> str:
    """b'\\xde\\xad' -> 'de ad', 16 bytes a line."""
    return "\n".join(data[i:i + HEX_LINE].hex(" ") for i in range(0, len(data), HEX_LINE))


__all__ = ["MAX_SHOWN_BYTES", "describe_bytes", "hex_dump"]
