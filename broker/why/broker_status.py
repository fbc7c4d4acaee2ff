"""A broker's own status for DescribeWhy: its ZooKeeper session state, whether it
is the controller (and which broker is), and how long it has been up.

``ZkSessionWatch`` follows the ClusterStore's listeners (controller/zk.py turns
kazoo's states into them, on the event loop):

    connect()                  -> CONNECTED
    connection "SUSPENDED"     -> SUSPENDED   (connection lost; the session may live)
    connection "RECONNECTED"   -> CONNECTED   (back within the same session)
    session "LOST"             -> LOST        (expired: our ephemerals are gone)
    session "RENEWED"          -> CONNECTED   (new session, registered again)
    store closed               -> CLOSED

It is written only by those listeners. Uptime is measured on the monotonic
clock from the watch's creation (at broker start).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from protocol.why_model import BrokerStatus


class ControllerView(Protocol):
    """What the status reads of this broker's Controller."""

    @property
    def is_active(self) -> bool: ...

    active_controller_id: int | None

class WatchedStore(Protocol):
    """What the watch uses of the ClusterStore (controller/zk.py)."""

    @property
    def closed(self) -> bool: ...

    def add_connection_listener(self, fn: Callable[[str], None]) -> None: ...

    def add_session_listener(self, fn: Callable[[str], None]) -> None: ...


CONNECTED, SUSPENDED, LOST, CLOSED, NOT_STARTED = (
    "CONNECTED", "SUSPENDED", "LOST", "CLOSED", "NOT_STARTED")


class ZkSessionWatch:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self.started = monotonic()
        self._state = NOT_STARTED
        self._store: WatchedStore | None = None

    def attach(self, store: WatchedStore) -> None:
        """Follow ``store`` (a connected ClusterStore)."""
        self._store = store
        self._state = CONNECTED
        store.add_connection_listener(self.on_connection)
        store.add_session_listener(self.on_session)

    def on_connection(self, what: str) -> None:
        self._state = SUSPENDED if what == "SUSPENDED" else CONNECTED

    def on_session(self, what: str) -> None:
        self._state = LOST if what == "LOST" else CONNECTED

    @property
    def state(self) -> str:
        if self._store is not None and self._store.closed:
            return CLOSED
        return self._state

    @property
    def uptime_ms(self) -> int:
        return int((self._monotonic() - self.started) * 1000)


def broker_status(broker_id: int, watch: ZkSessionWatch, controller: ControllerView | None,
                  cached_controller_id: int | None) -> BrokerStatus:
    """This broker's status: the controller facts from its Controller (the active
    id it last read from /controller), else ``cached_controller_id`` (the metadata
    cache's)."""
    is_controller = bool(controller is not None and controller.is_active)
    controller_id = controller.active_controller_id if controller is not None else None
    if controller_id is None:
        controller_id = cached_controller_id
    return BrokerStatus(
        broker_id=broker_id,
        zk_session_state=watch.state,
        is_controller=is_controller,
        controller_id=-1 if controller_id is None else int(controller_id),
        uptime_ms=watch.uptime_ms)
