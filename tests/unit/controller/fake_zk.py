"""An in-memory ZooKeeper behind the ZkClient seam (controller/zkclient.py).

One FakeZkServer holds the tree; each FakeZk is one client session on it.
Watches are persistent and fire synchronously on the thread that made the
change (as kazoo's recipes fire on its event thread). ``expire()`` simulates a
session expiry: the session's ephemerals vanish, listeners see LOST and then
CONNECTED with a new session id, and the session's watches re-fire.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable

from controller.errors import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from controller.zkclient import (CONNECTED, LOST, CheckOp, CreateOp, DeleteOp, Op, SetOp, Stat)


@dataclass(frozen=True)
class _Node:
    data: bytes
    version: int
    czxid: int
    owner: int
    seq: int = 0          # next sequence number for sequential children
    mzxid: int = 0        # zxid of the last change (the create or the last set)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


class FakeZkServer:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0, 0)}
        self.zxid = itertools.count(1)
        self.session_ids = itertools.count(0x1000)
        self.clients: list[FakeZk] = []
        self.ops = 0                 # count of mutating calls, for tests
        self.batches = 0             # count of pipelined get_many/multi_many calls

    def children_of(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted(p[len(prefix):] for p in self.nodes
                      if p.startswith(prefix) and "/" not in p[len(prefix):] and p != "/")

    def fire(self, changed: set[str]) -> None:
        """Run every watch on ``changed`` paths (data) and their parents (children)."""
        for client in list(self.clients):
            client._fire(changed)


class FakeZk:
    def __init__(self, server: FakeZkServer) -> None:
        self.server = server
        self.sid = 0
        self.started = False
        self.on_latency: Callable[[float], None] | None = None   # never called here
        self.listeners: list[Callable[[str], None]] = []
        self.child_watches: list[tuple[str, Callable[[list[str]], Any]]] = []
        self.data_watches: list[tuple[str, Callable[[bytes | None, Stat | None], Any]]] = []

    # -- session -------------------------------------------------------------------------

    def start(self, timeout: float) -> None:
        with self.server.lock:
            self.sid = next(self.server.session_ids)
            self.started = True
            self.server.clients.append(self)

    def stop(self) -> None:
        with self.server.lock:
            if not self.started:
                return
            self.started = False
            self.server.clients.remove(self)
            changed = self._drop_ephemerals()
        self.server.fire(changed)

    def _drop_ephemerals(self) -> set[str]:
        gone = {p for p, n in self.server.nodes.items() if n.owner == self.sid}
        for p in gone:
            del self.server.nodes[p]
        return gone

    def expire(self) -> None:
        """The session expires: ephemerals go, LOST; then a new session, CONNECTED."""
        with self.server.lock:
            changed = self._drop_ephemerals()
            self.sid = next(self.server.session_ids)
        self.server.fire(changed)
        for fn in list(self.listeners):
            fn(LOST)
        for fn in list(self.listeners):
            fn(CONNECTED)
        self._fire(None)

    def session_id(self) -> int:
        return self.sid

    # -- reads ---------------------------------------------------------------------------

    def _stat(self, n: _Node) -> Stat:
        return Stat(n.version, n.czxid, n.owner, n.mzxid)

    def get(self, path: str) -> tuple[bytes, Stat]:
        with self.server.lock:
            n = self.server.nodes.get(path)
            if n is None:
                raise NoNodeError(path)
            return n.data, self._stat(n)

    def exists(self, path: str) -> Stat | None:
        with self.server.lock:
            n = self.server.nodes.get(path)
            return None if n is None else self._stat(n)

    def children(self, path: str) -> list[str]:
        with self.server.lock:
            if path not in self.server.nodes:
                raise NoNodeError(path)
            return self.server.children_of(path)

    # -- writes --------------------------------------------------------------------------

    def _create(self, path: str, data: bytes, ephemeral: bool, sequence: bool,
                makepath: bool, changed: set[str]) -> str:
        nodes = self.server.nodes
        parent = _parent(path)
        if parent not in nodes:
            if not makepath:
                raise NoNodeError(parent)
            self._create(parent, b"", False, False, True, changed)
        if nodes[parent].owner:
            raise NoNodeError(f"ephemeral {parent} cannot have children")
        if sequence:
            pn = nodes[parent]
            nodes[parent] = replace(pn, seq=pn.seq + 1)
            path = f"{path}{pn.seq:010d}"
        if path in nodes:
            raise NodeExistsError(path)
        zxid = next(self.server.zxid)
        nodes[path] = _Node(data, 0, zxid, self.sid if ephemeral else 0, mzxid=zxid)
        changed.add(path)
        return path

    def _set(self, path: str, data: bytes, version: int, changed: set[str]) -> Stat:
        n = self.server.nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if version != -1 and version != n.version:
            raise BadVersionError(path)
        n = replace(n, data=data, version=n.version + 1, mzxid=next(self.server.zxid))
        self.server.nodes[path] = n
        changed.add(path)
        return self._stat(n)

    def _delete(self, path: str, version: int, changed: set[str]) -> None:
        n = self.server.nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if version != -1 and version != n.version:
            raise BadVersionError(path)
        if self.server.children_of(path):
            raise NotEmptyError(path)
        del self.server.nodes[path]
        changed.add(path)

    def _mutate(self, fn: Callable[[set[str]], Any]) -> Any:
        changed: set[str] = set()
        with self.server.lock:
            snapshot = dict(self.server.nodes)
            self.server.ops += 1
            try:
                result = fn(changed)
            except Exception:
                self.server.nodes = snapshot
                raise
        self.server.fire(changed)
        return result

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        return str(self._mutate(lambda ch: self._create(path, data, ephemeral, sequence,
                                                        makepath, ch)))

    def ensure_path(self, path: str) -> None:
        if self.exists(path) is None:
            try:
                self.create(path, makepath=True)
            except NodeExistsError:
                pass

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return self._mutate(lambda ch: self._set(path, data, version, ch))  # type: ignore[no-any-return]

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        def run(ch: set[str]) -> None:
            if recursive:
                for child in self.server.children_of(path):
                    self._delete_tree(f"{path.rstrip('/')}/{child}", ch)
            self._delete(path, version, ch)
        self._mutate(run)

    def _delete_tree(self, path: str, ch: set[str]) -> None:
        for child in self.server.children_of(path):
            self._delete_tree(f"{path}/{child}", ch)
        self._delete(path, -1, ch)

    def multi(self, ops: list[Op]) -> list[Any]:
        def run(ch: set[str]) -> list[Any]:
            out: list[Any] = []
            for op in ops:
                if isinstance(op, CreateOp):
                    out.append(self._create(op.path, op.data, op.ephemeral, False, False, ch))
                elif isinstance(op, SetOp):
                    out.append(self._set(op.path, op.data, op.version, ch))
                elif isinstance(op, CheckOp):
                    n = self.server.nodes.get(op.path)
                    if n is None:
                        raise NoNodeError(op.path)
                    if op.version != -1 and n.version != op.version:
                        raise BadVersionError(op.path)
                    out.append(True)
                elif isinstance(op, DeleteOp):
                    self._delete(op.path, op.version, ch)
                    out.append(True)
            return out
        return self._mutate(run)  # type: ignore[no-any-return]

    # -- watches -------------------------------------------------------------------------

    def watch_children(self, path: str, fn: Callable[[list[str]], Any]) -> None:
        self.child_watches.append((path, fn))
        if fn(self.children(path)) is False:
            self.child_watches.remove((path, fn))

    def watch_data(self, path: str, fn: Callable[[bytes | None, Stat | None], Any]) -> None:
        self.data_watches.append((path, fn))
        self._fire_data(path, fn)

    def _fire_data(self, path: str, fn: Callable[[bytes | None, Stat | None], Any]) -> None:
        try:
            data, st = self.get(path)
        except NoNodeError:
            data, st = None, None  # type: ignore[assignment]
        if fn(data, st) is False:
            self.data_watches.remove((path, fn))

    def _fire(self, changed: set[str] | None) -> None:
        """changed=None re-fires everything (after a new session)."""
        if not self.started:
            return
        parents = None if changed is None else {_parent(p) for p in changed}
        for path, fn in list(self.child_watches):
            if parents is None or path in parents:
                try:
                    kids = self.children(path)
                except NoNodeError:
                    self.child_watches.remove((path, fn))
                    continue
                if fn(kids) is False:
                    self.child_watches.remove((path, fn))
        for path, dfn in list(self.data_watches):
            if changed is None or path in changed:
                self._fire_data(path, dfn)

    def add_listener(self, fn: Callable[[str], None]) -> None:
        self.listeners.append(fn)

    # -- pipelined batches (one "round trip" each) ---------------------------------------

    def get_many(self, paths: list[str]) -> list[tuple[bytes, Stat] | Exception]:
        self.server.batches += 1
        out: list[tuple[bytes, Stat] | Exception] = []
        for p in paths:
            try:
                out.append(self.get(p))
            except NoNodeError as e:
                out.append(e)
        return out

    def multi_many(self, txns: list[list[Op]]) -> list[list[Any] | Exception]:
        self.server.batches += 1
        out: list[list[Any] | Exception] = []
        for ops in txns:
            try:
                out.append(self.multi(ops))
            except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError) as e:
                out.append(e)
        return out
