"""The ZooKeeper access the ACL store needs, as a small async Protocol, and its
adapter over the broker's ClusterStore.

The adapter drives ``cluster.zk`` (the ZkClient seam ClusterStore holds, kazoo
behind it) in worker threads with ``asyncio.to_thread`` and uses ClusterStore's
own ``watch_children`` (callbacks on the event loop), so kazoo stays inside
controller/. Should ClusterStore grow the same generic methods, ``AclZk`` is
what it has to satisfy.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Protocol

from controller import BadVersionError, NodeExistsError, NoNodeError


class AclZk(Protocol):
    async def ensure_path(self, path: str) -> None: ...

    async def get_data(self, path: str) -> tuple[bytes, int] | None:
        """(data, version), or None when the znode does not exist."""
        ...

    async def children(self, path: str) -> list[str]:
        """Child names; [] when the znode does not exist."""
        ...

    async def create(self, path: str, data: bytes) -> bool:
        """Create (parents too); False when it already exists."""
        ...

    async def set_data(self, path: str, data: bytes, version: int) -> int | None:
        """Conditional set; -> the new version, None when the version moved on
        or the znode is gone."""
        ...

    async def delete(self, path: str, version: int) -> bool:
        """Conditional delete; True when deleted or already absent, False when the
        version moved on."""
        ...

    async def create_sequential(self, prefix: str, data: bytes) -> str:
        """A persistent sequential znode <prefix><10 digits>; -> its path."""
        ...

    def watch_children(self, path: str, fn: Callable[[list[str]], None]) -> Callable[[], None]:
        """fn(children) now and on every change, on the event loop; -> cancel."""
        ...


class ClusterZkAccess:
    """AclZk over ClusterStore: ``cluster.zk`` (sync ZkClient) in worker threads."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    @property
    def _zk(self) -> Any:
        return self.cluster.zk

    async def ensure_path(self, path: str) -> None:
        await asyncio.to_thread(self._zk.ensure_path, path)

    async def get_data(self, path: str) -> tuple[bytes, int] | None:
        def read() -> tuple[bytes, int] | None:
            try:
                data, stat = self._zk.get(path)
            except NoNodeError:
                return None
            return data, stat.version
        return await asyncio.to_thread(read)

    async def children(self, path: str) -> list[str]:
        def read() -> list[str]:
            try:
                return list(self._zk.children(path))
            except NoNodeError:
                return []
        return await asyncio.to_thread(read)

    async def create(self, path: str, data: bytes) -> bool:
        def write() -> bool:
            try:
                self._zk.create(path, data, makepath=True)
            except NodeExistsError:
                return False
            return True
        return await asyncio.to_thread(write)

    async def set_data(self, path: str, data: bytes, version: int) -> int | None:
        def write() -> int | None:
            try:
                return int(self._zk.set(path, data, version).version)
            except (BadVersionError, NoNodeError):
                return None
        return await asyncio.to_thread(write)

    async def delete(self, path: str, version: int) -> bool:
        def write() -> bool:
            try:
                self._zk.delete(path, version)
            except NoNodeError:
                return True
            except BadVersionError:
                return False
            return True
        return await asyncio.to_thread(write)

    async def create_sequential(self, prefix: str, data: bytes) -> str:
        def write() -> str:
            return str(self._zk.create(prefix, data, sequence=True, makepath=True))
        return await asyncio.to_thread(write)

    def watch_children(self, path: str, fn: Callable[[list[str]], None]) -> Callable[[], None]:
        cancel: Callable[[], None] = self.cluster.watch_children(path, fn)
        return cancel
