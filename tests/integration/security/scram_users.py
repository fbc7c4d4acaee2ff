"""Users' SCRAM credentials written straight into ZooKeeper, before brokers start, as
``kafka-configs.sh --zookeeper ... --add-config 'SCRAM-SHA-512=[password=...]'`` does:
``/config/users/<user>`` = ``{"version":1,"config":{"SCRAM-SHA-512":"salt=...,..."}}``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from protocol.scram import format_credential, make_credential

BOTH = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def store_scram_credentials(zk_connect: str, passwords: Mapping[str, str],
                            mechanisms: Iterable[str] = BOTH) -> None:
    """One credential per user and mechanism (``zk_connect`` may carry a chroot:
    ``KazooZk.start`` creates it first, as the brokers do, so the writes never meet a
    missing chroot)."""
    from controller.kazoo_zk import KazooZk
    zk = KazooZk(zk_connect, session_timeout_ms=10000)
    zk.start(timeout=10)
    try:
        for user, password in passwords.items():
            config = {m: format_credential(make_credential(m, password)) for m in mechanisms}
            zk.create(f"/config/users/{user}", json.dumps(
                {"version": 1, "config": config}).encode(), makepath=True)
    finally:
        zk.stop()
