"""KazooZk: the ZkClient seam (controller/zkclient.py) over kazoo -- the only
module of the project that imports kazoo.

Besides the one-call-at-a-time operations it offers two pipelined ones, the
way Kafka's KafkaZkClient sends many requests before waiting for any answer
(retryRequestsUntilConnected over ZooKeeper's async API): ``get_many`` issues
every ``get_async`` first and then collects the results, ``multi_many``
commits many small transactions with ``commit_async``. One round trip is paid
for the whole batch instead of one per znode, which is what makes a failover
of thousands of partitions take milliseconds of ZooKeeper time rather than
seconds. Each transaction still stands alone (one partition's bad version
does not fail the others).

Latency (the broker's ZooKeeperRequestLatencyMs metric): ``on_latency``, when set,
is called with the seconds each request took, on the calling worker thread: a
blocking call from its start to its answer, a pipelined one from the batch's
start to the moment its answer is collected.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from kazoo import exceptions as kx
from kazoo.client import KazooClient
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from controller.errors import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError, \
    ZkError
from controller.zkclient import CheckOp, CreateOp, Op, SetOp, Stat


def _translate(e: Exception) -> Exception:
    if isinstance(e, kx.NoNodeError):
        return NoNodeError(str(e))
    if isinstance(e, kx.NodeExistsError):
        return NodeExistsError(str(e))
    if isinstance(e, kx.BadVersionError):
        return BadVersionError(str(e))
    if isinstance(e, kx.NotEmptyError):
        return NotEmptyError(str(e))
    return ZkError(f"{type(e).__name__}: {e}")


def _stat(s: Any) -> Stat:
    return Stat(s.version, s.czxid, s.ephemeralOwner, s.mzxid)


def _reconnect_retry() -> KazooRetry:
    """Reconnect attempts at most 1 s apart, for ever. kazoo's default doubles the wait
    up to an hour, so after a ZooKeeper outage of T seconds the next attempt may come
    T seconds after ZooKeeper is back: later than a short session timeout, and a
    session that ZooKeeper had kept across its restart expires for nothing. (Kafka's
    client waits at most about 1 s between attempts too.)"""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)


class KazooZk:
    """ZkClient over kazoo. ``hosts`` may carry a chroot ("h:2181/pybroker"): kazoo
    prefixes every path with it; the chroot node itself is created on start."""

    def __init__(self, hosts: str, session_timeout_ms: int = 18000) -> None:
        self._hosts = hosts
        self._kz = KazooClient(hosts=hosts, timeout=session_timeout_ms / 1000.0,
                               connection_retry=_reconnect_retry())
        self.on_latency: Callable[[float], None] | None = None   # seconds per request

    def start(self, timeout: float) -> None:
        host_part, slash, chroot = self._hosts.partition("/")
        if slash and chroot.strip("/"):
            # kazoo does not create the chroot; Kafka does (createChrootIfNecessary).
            boot = KazooClient(hosts=host_part, connection_retry=_reconnect_retry())
            boot.start(timeout=timeout)
            try:
                boot.ensure_path("/" + chroot.strip("/"))
            finally:
                boot.stop()
                boot.close()
        self._kz.start(timeout=timeout)

    def stop(self) -> None:
        self._kz.stop()
        self._kz.close()

    def session_id(self) -> int:
        sid = self._kz.client_id
        return int(sid[0]) if sid else 0

    def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kw)
        except kx.KazooException as e:
            raise _translate(e) from e
        finally:
            self._took(started)

    def _call_async(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Issue a pipelined request (its latency is counted when collected)."""
        try:
            return fn(*args)
        except kx.KazooException as e:
            raise _translate(e) from e

    def _took(self, started: float) -> None:
        hook = self.on_latency
        if hook is not None:
            hook(time.perf_counter() - started)

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        return str(self._call(self._kz.create, path, data, ephemeral=ephemeral,
                              sequence=sequence, makepath=makepath))

    def ensure_path(self, path: str) -> None:
        self._call(self._kz.ensure_path, path)

    def get(self, path: str) -> tuple[bytes, Stat]:
        data, st = self._call(self._kz.get, path)
        return data or b"", _stat(st)

    def exists(self, path: str) -> Stat | None:
        st = self._call(self._kz.exists, path)
        return None if st is None else _stat(st)

    def children(self, path: str) -> list[str]:
        return list(self._call(self._kz.get_children, path))

    def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return _stat(self._call(self._kz.set, path, data, version))

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        self._call(self._kz.delete, path, version, recursive)

    def _transaction(self, ops: list[Op]) -> Any:
        tx = self._kz.transaction()
        for op in ops:
            if isinstance(op, CreateOp):
                tx.create(op.path, op.data, ephemeral=op.ephemeral)
            elif isinstance(op, SetOp):
                tx.set_data(op.path, op.data, op.version)
            elif isinstance(op, CheckOp):
                tx.check(op.path, op.version)
            else:
                tx.delete(op.path, op.version)
        return tx

    @staticmethod
    def _tx_results(results: list[Any]) -> list[Any]:
        # kazoo reports a failed transaction as a result list: the failing op's
        # exception, RolledBackError for the others.
        for r in results:
            if isinstance(r, Exception) and not isinstance(r, kx.RolledBackError):
                raise _translate(r)
        if any(isinstance(r, Exception) for r in results):
            raise ZkError("transaction rolled back")
        return [_stat(r) if hasattr(r, "czxid") else r for r in results]

    def multi(self, ops: list[Op]) -> list[Any]:
        tx = self._transaction(ops)
        return self._tx_results(self._call(tx.commit))

    def multi_many(self, txns: list[list[Op]]) -> list[list[Any] | Exception]:
        """Commit every transaction, pipelined; -> per transaction its results or
        the (translated) error."""
        started = time.perf_counter()
        pending = [self._call_async(self._transaction(ops).commit_async) for ops in txns]
        out: list[list[Any] | Exception] = []
        for a in pending:
            try:
                out.append(self._tx_results(a.get()))
            except kx.KazooException as e:
                out.append(_translate(e))
            except ZkError as e:
                out.append(e)
            self._took(started)
        return out

    def get_many(self, paths: list[str]) -> list[tuple[bytes, Stat] | Exception]:
        """Read every path, pipelined; -> per path (data, stat) or the error."""
        started = time.perf_counter()
        pending = [self._call_async(self._kz.get_async, p) for p in paths]
        out: list[tuple[bytes, Stat] | Exception] = []
        for a in pending:
            try:
                data, st = a.get()
                out.append((data or b"", _stat(st)))
            except kx.KazooException as e:
                out.append(_translate(e))
            self._took(started)
        return out

    # kazoo's watch recipes read the znode in their constructor, a blocking round trip;
    # they are set up on a kazoo handler thread instead, so the event loop never waits
    # for ZooKeeper (a controller's topic churn set one per new topic: py-spy showed
    # the loop in DataWatch._get_data). The callbacks fire on kazoo threads anyway,
    # the first with the data as it is when the watch is set.
    def watch_children(self, path: str, fn: Callable[[list[str]], bool | None]) -> None:
        self._kz.handler.spawn(ChildrenWatch, self._kz, path, fn)

    def watch_data(self, path: str,
                   fn: Callable[[bytes | None, Stat | None], bool | None]) -> None:
        def wrapped(data: bytes | None, st: Any) -> bool | None:
            return fn(data, None if st is None else _stat(st))
        self._kz.handler.spawn(DataWatch, self._kz, path, wrapped)

    def add_listener(self, fn: Callable[[str], None]) -> None:
        self._kz.add_listener(lambda state: fn(str(state)))
