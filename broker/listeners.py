"""Listener strings: ``PLAINTEXT://host:port[,NAME://host:port]``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from broker.config import ConfigError

_LISTENER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:/]*):(\d+)$")


@dataclass(frozen=True)
class Endpoint:
    name: str       # listener name, e.g. PLAINTEXT
    host: str       # "" means all interfaces
    port: int


def parse_listeners(key: str, value: str) -> list[Endpoint]:
    out: list[Endpoint] = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        m = _LISTENER.match(item)
        if m is None:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: "
                              "expected NAME://host:port")
        port = int(m.group(3))
        if port > 65535:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: port out of range")
        out.append(Endpoint(m.group(1).upper(), m.group(2).strip("[]"), port))
    if not out:
        raise ConfigError(f"Invalid value {value!r} for configuration {key}: no listener")
    return out
