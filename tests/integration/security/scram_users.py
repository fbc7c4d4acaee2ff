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
    """One credential per user and mechanism (``zk_connect`` may carry a chroot).

    The client connects without the chroot and writes under it: the chroot may not
    exist yet (the brokers create it when they start), and kazoo connected to a
    missing chroot warns that it "should be created before normal use"."""
    from kazoo.client import KazooClient   # test-side only; the broker reads through controller/
    hosts, _, chroot = zk_connect.partition("/")
    root = "/" + chroot.strip("/") if chroot.strip("/") else ""
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=10)
    try:
        for user, password in passwords.items():
            config = {m: format_credential(make_credential(m, password)) for m in mechanisms}
            zk.create(f"{root}/config/users/{user}", json.dumps(
                {"version": 1, "config": config}).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
