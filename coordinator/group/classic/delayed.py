"""The coordinator's delayed operations (Kafka's DelayedJoin, InitialDelayedJoin,
DelayedSync, DelayedHeartbeat), on coordinator/runtime/purgatory's verbs.

Each op only asks the coordinator (``try_complete``) and tells it (``on_complete`` /
``on_expiration``) through ``DelayedCallbacks``; the group logic stays in
``group_coordinator``. Keys (coordinator_types: ``join_key``, ``sync_key``,
``member_key``): ``("join", group)`` for the rebalance, ``("sync", group)`` for the
pending-sync deadline, ``("member", group, member_id)`` for a member's session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from coordinator.group.classic.coordinator_types import join_key, member_key, sync_key
from coordinator.runtime.purgatory import DelayedOperation, Purgatory

if TYPE_CHECKING:
    from coordinator.group.classic.group_metadata import GroupMetadata


class DelayedCallbacks(Protocol):
    """What the delayed operations ask and tell the group coordinator."""

    def try_complete_join(self, group: GroupMetadata, force: Callable[[], bool]) -> bool: ...

    def on_complete_join(self, group: GroupMetadata) -> None: ...

    def try_complete_pending_sync(self, group: GroupMetadata, generation: int,
                                  force: Callable[[], bool]) -> bool: ...

    def on_expire_pending_sync(self, group: GroupMetadata, generation: int) -> None: ...

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force: Callable[[], bool]) -> bool: ...

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str,
                            is_pending: bool) -> None: ...


class DelayedJoin(DelayedOperation):
    """Completes when every member has rejoined, or at the rebalance timeout."""

    def __init__(self, coordinator: DelayedCallbacks, group: GroupMetadata, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an Empty group waits ``group.initial.rebalance.delay.ms``,
    and again (up to the rebalance timeout) while new members keep arriving."""

    def __init__(self, coordinator: DelayedCallbacks, purgatory: Purgatory, group: GroupMetadata,
                 configured_delay_ms: int, delay_ms: int, remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.purgatory = purgatory
        self.configured_delay_ms = configured_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        if group.new_member_added and self.remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.configured_delay_ms, self.remaining_ms)
            remaining = max(self.remaining_ms - self.delay_ms, 0)
            self.purgatory.try_complete_else_watch(InitialDelayedJoin(
                self.coordinator, self.purgatory, group, self.configured_delay_ms, delay,
                remaining), [join_key(group.group_id)])
        else:
            super().on_complete()


class DelayedSync(DelayedOperation):
    """After a join completes: every member must SyncGroup within the rebalance
    timeout, or the ones that did not are removed and the group rebalances."""

    def __init__(self, coordinator: DelayedCallbacks, group: GroupMetadata, generation: int,
                 timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.generation = generation

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_pending_sync(self.group, self.generation,
                                                          self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation)


class DelayedHeartbeat(DelayedOperation):
    """A member's session: expires unless a heartbeat (or a rebalance wait) satisfies it."""

    def __init__(self, coordinator: DelayedCallbacks, group: GroupMetadata, member_id: str,
                 is_pending: bool, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(self.group, self.member_id,
                                                       self.is_pending, self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)
