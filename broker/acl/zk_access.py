"""The ZooKeeper access the ACL store needs, as a small async Protocol.

The broker's ClusterStore satisfies it (controller/zk_generic.py plus its own
``watch_children``); unit tests use an in-memory fake.
"""

from __future__ import annotations

from typing import Callable, Protocol


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
