"""Generic znode operations on ClusterStore, for stores that keep their own
layout in ZooKeeper (the ACL store: /kafka-acl, /kafka-acl-changes, ...).

A mixin: ClusterStore supplies ``zk`` (the synchronous ZkClient seam) and
``_run`` (runs a call in a worker thread). Every method is async and maps
ZooKeeper's races to plain results instead of exceptions, as the callers need.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable

from controller.zkclient import ZkClient
from controller.errors import BadVersionError, NodeExistsError, NoNodeError


class GenericZnodeAccess:
    zk: ZkClient
    _run: Callable[..., Awaitable[Any]]

    async def ensure_path(self, path: str) -> None:
        await self._run(self.zk.ensure_path, path)

    async def get_data(self, path: str) -> tuple[bytes, int] | None:
        """(data, version), or None when the znode does not exist."""
        def read() -> tuple[bytes, int] | None:
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                return None
            return data, stat.version
        return await self._run(read)

    async def children(self, path: str) -> list[str]:
        """Child names; [] when the znode does not exist."""
        def read() -> list[str]:
            try:
                return list(self.zk.children(path))
            except NoNodeError:
                return []
        return await self._run(read)

    async def create(self, path: str, data: bytes) -> bool:
        """Create (parents too); False when it already exists."""
        def write() -> bool:
            try:
                self.zk.create(path, data, makepath=True)
            except NodeExistsError:
                return False
            return True
        return await self._run(write)

    async def set_data(self, path: str, data: bytes, version: int) -> int | None:
        """Conditional set -> the new version; None when the version moved on or
        the znode is gone."""
        def write() -> int | None:
            try:
                return int(self.zk.set(path, data, version).version)
            except (BadVersionError, NoNodeError):
                return None
        return await self._run(write)

    async def delete(self, path: str, version: int) -> bool:
        """Conditional delete; True when deleted or already absent, False when the
        version moved on."""
        def write() -> bool:
            try:
                self.zk.delete(path, version)
            except NoNodeError:
                return True
            except BadVersionError:
                return False
            return True
        return await self._run(write)

    async def create_sequential(self, prefix: str, data: bytes) -> str:
        """A persistent sequential znode <prefix><10 digits> -> its path."""
        return str(await self._run(
            lambda: self.zk.create(prefix, data, sequence=True, makepath=True)))
