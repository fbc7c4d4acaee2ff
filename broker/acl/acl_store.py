"""ACLs in ZooKeeper, cached in every broker (Kafka's AclAuthorizer storage half).

Layout and JSON: broker/acl/acl_model.py. The cache maps each resource pattern
to its entries and the znode version they were read at; every broker keeps it
current through the change notifications:

1. a writer updates /kafka-acl[-extended/prefixed]/<Type>/<name> with a
   conditional set (create when absent, delete when the last ACL goes), reading
   the znode again and retrying on a lost race (at most ``max_retries`` times);
2. when the entries changed it creates a sequential change node under
   /kafka-acl-changes (literal) or /kafka-acl-extended-changes (prefixed);
3. every broker watches both change paths; for each new change node (by
   sequence) it re-reads that one resource znode into its cache. Change nodes
   are deleted by the brokers once seen for ``CHANGE_EXPIRATION_S`` (Kafka
   purges them after 15 minutes too).

Start-up reads the change paths before loading every resource, then watches
them: a change made after that first read is processed again, never missed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from broker.acl.acl_model import (ACL_PATHS, CHANGE_PREFIX, EXTENDED_CHANGES, LITERAL_CHANGES,
                                  STORE_ROOTS, WILDCARD, AccessControlEntry, PatternType,
                                  ResourcePattern, ResourceType, changes_path, decode_acls,
                                  decode_change, encode_acls, encode_change, parse_name,
                                  resource_path)
from broker.acl.zk_access import AclZk

log = logging.getLogger("pybroker.acl")

ABSENT = -1                   # version of a resource znode that does not exist
CHANGE_EXPIRATION_S = 900.0   # Kafka's ZkNodeChangeNotificationListener changeExpirationMs
Entries = frozenset[AccessControlEntry]


class AclUpdateFailed(Exception):
    """A resource's ACLs could not be written after every retry."""


@dataclass(frozen=True)
class VersionedAcls:
    entries: Entries
    version: int               # the znode's data version, ABSENT when there is none


class AclCache:
    """Resource pattern -> entries, with prefixed patterns also indexed by
    (resource type, prefix) so matching a name costs one lookup per character."""

    def __init__(self) -> None:
        self._acls: dict[ResourcePattern, VersionedAcls] = {}
        self._prefixed: dict[tuple[ResourceType, str], Entries] = {}

    def get(self, p: ResourcePattern) -> VersionedAcls | None:
        return self._acls.get(p)

    def put(self, p: ResourcePattern, v: VersionedAcls) -> None:
        if v.entries:
            self._acls[p] = v
        else:
            self._acls.pop(p, None)
        if p.pattern_type == PatternType.PREFIXED:
            if v.entries:
                self._prefixed[(p.resource_type, p.name)] = v.entries
            else:
                self._prefixed.pop((p.resource_type, p.name), None)

    def __iter__(self) -> Iterator[tuple[ResourcePattern, Entries]]:
        for p, v in sorted(self._acls.items()):
            yield p, v.entries

    def __len__(self) -> int:
        return len(self._acls)

    def matching(self, rtype: ResourceType, name: str) -> list[Entries]:
        """Every entry set that applies to the resource ``rtype``:``name``: the
        literal wildcard, the literal name and each prefixed pattern that is a
        prefix of the name (AclAuthorizer.matchingAcls)."""
        out = []
        for p in (ResourcePattern(rtype, WILDCARD, PatternType.LITERAL),
                  ResourcePattern(rtype, name, PatternType.LITERAL)):
            v = self._acls.get(p)
            if v is not None:
                out.append(v.entries)
        if self._prefixed:
            for i in range(1, len(name) + 1):
                entries = self._prefixed.get((rtype, name[:i]))
                if entries is not None:
                    out.append(entries)
        return out


class AclStore:
    def __init__(self, zk: AclZk, max_retries: int = 10, retry_backoff_s: float = 0.1) -> None:
        self.zk = zk
        self.cache = AclCache()
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.lock = asyncio.Lock()      # one writer / notification processor at a time
        self._seen: dict[str, dict[str, float]] = {LITERAL_CHANGES: {}, EXTENDED_CHANGES: {}}
        self._cancels: list[Callable[[], None]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # -- start-up ------------------------------------------------------------------------

    async def start(self) -> None:
        for path in ACL_PATHS:
            await self.zk.ensure_path(path)
        now = time.monotonic()
        for root, seen in self._seen.items():
            for name in await self.zk.children(root):
                seen[name] = now
        async with self.lock:
            await self.load_all()
        for root in self._seen:
            self._cancels.append(self.zk.watch_children(root, self._changes_callback(root)))
        log.info("ACL authorizer loaded ACLs for %d resources", len(self.cache))

    async def load_all(self) -> None:
        for ptype, root in STORE_ROOTS.items():
            for type_name in await self.zk.children(root):
                rtype = parse_name(ResourceType, type_name)
                if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
                    log.warning("ignoring ACLs of unknown resource type %s", type_name)
                    continue
                for name in await self.zk.children(f"{root}/{type_name}"):
                    p = ResourcePattern(rtype, name, ptype)
                    self.cache.put(p, await self.read(p))

    def close(self) -> None:
        for cancel in self._cancels:
            cancel()
        self._cancels.clear()
        for task in self._tasks:
            task.cancel()

    # -- reads and writes ----------------------------------------------------------------

    async def read(self, p: ResourcePattern) -> VersionedAcls:
        got = await self.zk.get_data(resource_path(p))
        if got is None:
            return VersionedAcls(frozenset(), ABSENT)
        try:
            return VersionedAcls(decode_acls(got[0]), got[1])
        except (ValueError, KeyError, TypeError) as e:
            log.error("unreadable ACLs at %s: %s", resource_path(p), e)
            return VersionedAcls(frozenset(), got[1])

    async def update(self, p: ResourcePattern, edit: Callable[[Entries], Entries]) -> bool:
        """Apply ``edit`` to the resource's entries in ZooKeeper (caller holds
        ``lock``); -> whether they changed. Raises AclUpdateFailed."""
        current = self.cache.get(p) or await self.read(p)
        for attempt in range(self.max_retries + 1):
            new = frozenset(edit(current.entries))
            version = await self._write(p, current, new)
            if version is not None:
                break
            await asyncio.sleep(self.retry_backoff_s * (1 + attempt % 2))
            current = await self.read(p)
        else:
            raise AclUpdateFailed(f"Failed to update ACLs for {p} after trying a maximum "
                                  f"of {self.max_retries} times")
        self.cache.put(p, VersionedAcls(new, version))
        if new == current.entries:
            return False
        log.info("updated ACLs for %s (version %d)", p, version)
        await self.zk.create_sequential(f"{changes_path(p.pattern_type)}/{CHANGE_PREFIX}",
                                        encode_change(p))
        return True

    async def _write(self, p: ResourcePattern, current: VersionedAcls,
                     new: Entries) -> int | None:
        """One conditional write; -> the version now stored, None on a lost race."""
        path = resource_path(p)
        if not new:
            if current.version == ABSENT:
                return ABSENT
            return ABSENT if await self.zk.delete(path, current.version) else None
        if current.version == ABSENT:
            return 0 if await self.zk.create(path, encode_acls(new)) else None
        return await self.zk.set_data(path, encode_acls(new), current.version)

    # -- change notifications ------------------------------------------------------------

    def _changes_callback(self, root: str) -> Callable[[list[str]], None]:
        def changed(children: list[str]) -> None:
            seen = self._seen[root]
            now = time.monotonic()
            fresh = sorted((c for c in children if c.startswith(CHANGE_PREFIX) and c not in seen),
                           key=lambda c: int(c[len(CHANGE_PREFIX):] or 0))
            expired = [c for c in children if now - seen.get(c, now) > CHANGE_EXPIRATION_S]
            for c in fresh:
                seen[c] = now
            for c in set(seen) - set(children):
                del seen[c]
            if fresh or expired:
                self._spawn(self._process(root, fresh, expired))
        return changed

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, root: str, fresh: list[str], expired: list[str]) -> None:
        try:
            async with self.lock:
                for name in fresh:
                    got = await self.zk.get_data(f"{root}/{name}")
                    if got is None:
                        continue
                    try:
                        p = decode_change(root, got[0])
                    except (ValueError, KeyError, TypeError) as e:
                        log.warning("ignoring malformed ACL change %s/%s: %s", root, name, e)
                        continue
                    self.cache.put(p, await self.read(p))
                    log.info("processed ACL change notification for %s", p)
            for name in expired:
                await self.zk.delete(f"{root}/{name}", -1)
        except Exception:
            log.exception("processing ACL change notifications failed")
