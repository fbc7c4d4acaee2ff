"""The ZooKeeper client seam: a small synchronous interface the control plane
uses, implemented over kazoo in controller/zk.py and in memory by the tests'
FakeZk. Calls block; ClusterStore runs them in worker threads.

Watch callbacks run on the client's own thread (kazoo's event thread, or the
caller's thread in a fake) and must only hand work over to the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol


class Stat(NamedTuple):
    version: int          # data version: bumps on every set
    czxid: int            # zxid of the create (Kafka's broker epoch)
    ephemeral_owner: int  # session id owning an ephemeral node, 0 otherwise
    mzxid: int = 0        # zxid of the last change (the create or the last set)


@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True)
class SetOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = -1


Op = CreateOp | SetOp | CheckOp | DeleteOp

# Session states reported to listeners (kazoo's KazooState values).
CONNECTED, SUSPENDED, LOST = "CONNECTED", "SUSPENDED", "LOST"


class ZkClient(Protocol):
    """Errors raised are controller.errors' NoNodeError / NodeExistsError /
    BadVersionError / NotEmptyError / ZkError."""

    # called with each request's seconds when set (the broker's ZooKeeper latency metric)
    on_latency: Callable[[float], None] | None

    def start(self, timeout: float) -> None: ...
    def stop(self) -> None: ...
    def session_id(self) -> int: ...
    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str: ...
    def ensure_path(self, path: str) -> None: ...
    def get(self, path: str) -> tuple[bytes, Stat]: ...
    def exists(self, path: str) -> Stat | None: ...
    def children(self, path: str) -> list[str]: ...
    def set(self, path: str, data: bytes, version: int = -1) -> Stat: ...
    def delete(self, path: str, version: int = -1, recursive: bool = False) -> None: ...

    def multi(self, ops: list[Op]) -> list[Any]:
        """All or nothing. -> per op: created path (CreateOp), Stat (SetOp), True
        (CheckOp/DeleteOp). A failure raises the first failing op's error."""
        ...

    def watch_children(self, path: str, fn: Callable[[list[str]], bool | None]) -> None:
        """Call fn(children) now and after every change, until fn returns False.
        The path must exist."""
        ...

    def watch_data(self, path: str,
                   fn: Callable[[bytes | None, Stat | None], bool | None]) -> None:
        """Call fn(data, stat) now and after every change (None, None while the
        znode does not exist), until fn returns False."""
        ...

    def add_listener(self, fn: Callable[[str], None]) -> None:
        """fn(state) on every session state change: CONNECTED, SUSPENDED, LOST."""
        ...

    def get_many(self, paths: list[str]) -> list[tuple[bytes, Stat] | Exception]:
        """Read many znodes in one pipelined batch; -> per path (data, stat) or the
        error (NoNodeError ...), in order."""
        ...

    def multi_many(self, txns: list[list[Op]]) -> list[list[Any] | Exception]:
        """Commit many independent transactions in one pipelined batch; -> per
        transaction its results (as ``multi``) or the error, in order."""
        ...
