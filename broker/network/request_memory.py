"""Bounds on requests read but not yet handled: bytes (``queued.max.request.bytes``)
and count (``queued.max.requests``), shared by every connection of a broker.

Theory of operation:

1. ``RequestMemoryPool`` is Kafka's ``SimpleMemoryPool`` in its non-strict mode
   (the one ``SocketServer`` uses). A connection charges the pool for every byte
   it reads from its socket and gives a frame's bytes back once that request is
   handled (its handler returned; for a Produce, once its records are appended),
   the rest when it closes. Before it begins reading a new frame a connection
   checks the pool: while it is exhausted (nothing available) the connection
   does not read, so the broker stops reading from sockets until memory is
   freed, as Kafka's Selector mutes its channels under memory pressure. A
   connection in the middle of a frame reads on to its end (Kafka allocates a
   frame's whole buffer when its size arrives, and fills it), so the bound is
   ``capacity`` plus the frames begun when it was reached, each at most
   ``socket.request.max.bytes``. ``queued.max.request.bytes`` = -1 (Kafka's
   default): no bound, and nothing ever waits.
2. ``RequestQueue`` bounds the requests decoded and in their handler
   (Kafka's RequestChannel queue of ``queued.max.requests``). A request takes a
   slot before its handler is called and gives it back when the handler
   returns, or, for a Produce, once its records are appended (in Kafka the
   request then waits in the produce purgatory, outside the queue). At the
   bound, the next request waits for a slot, and so its connection reads
   nothing more: first come, first served. A handler that waits for something
   else (a Fetch long-poll, a JoinGroup for the rebalance, a CreateTopics for
   ZooKeeper) is *parked*, as Kafka's purgatories free the I/O thread: a slot held
   longer than ``PARKED_S`` stops counting. No handler computes that long without
   stalling the event loop, so a slot that old belongs to a handler that waits.
   Slots are kept in the order they were taken, so finding the parked ones looks
   only at the oldest; it is done when the queue is full (and, while requests
   wait for a slot, by a timer at the oldest slot's parking time).
3. Both have a synchronous fast path (``try_enter``; plain integer arithmetic for
   bytes): a request on an unloaded broker pays two comparisons and two
   additions, no coroutine.
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque


class RequestMemoryPool:
    """Bytes of request frames read and not yet handled, across the broker."""

    __slots__ = ("capacity", "available", "_waiters")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity if capacity > 0 else -1
        self.available = capacity if capacity > 0 else sys.maxsize    # may go below 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def used(self) -> int:
        return self.capacity - self.available if self.capacity > 0 else 0

    def take(self, size: int) -> None:
        self.available -= size

    def release(self, size: int) -> None:
        self.available += size
        if self._waiters and self.available > 0:
            waiters, self._waiters = self._waiters, deque()
            for waiter in waiters:           # non-strict: everyone may read again
                if not waiter.done():
                    waiter.set_result(None)

    async def wait_available(self) -> None:
        """Return once some memory is available (at once if it is)."""
        loop = asyncio.get_running_loop()
        while self.available <= 0:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            await waiter


PARKED_S = 0.1     # a slot held this long belongs to a waiting handler (see 2.)


class Slot:
    """One request's place in the queue: taken at ``start`` (loop time); ``held``
    until the request leaves or is parked."""

    __slots__ = ("start", "held")

    def __init__(self, start: float) -> None:
        self.start = start
        self.held = True


class RequestQueue:
    """Slots for requests in their handler (``queued.max.requests``)."""

    __slots__ = ("limit", "in_flight", "_held", "_waiters", "_timer")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0                  # slots held, parked ones not counted
        self._held: deque[Slot] = deque()   # in the order taken; may hold left ones
        self._waiters: deque[asyncio.Future[Slot]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def try_enter(self) -> Slot | None:
        """Take a slot if one is free and nobody waits for one."""
        held = self._held
        while held and not held[0].held:     # left already: drop (amortised O(1))
            held.popleft()
        if len(held) > 2 * self.limit + 64:
            # One request held long at the front (a JoinGroup waiting out a rebalance)
            # kept every later, long-left slot behind it: 150,000 after minutes of the
            # fuzzer's traffic. Keep only the held ones (at most ``limit`` while nobody
            # waits: parked ones are no longer held), so this runs once per ``limit``
            # entries at most: still amortised O(1).
            held = self._held = deque(slot for slot in held if slot.held)
        if self.in_flight >= self.limit:
            self._park(asyncio.get_running_loop().time())
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            slot = Slot(asyncio.get_running_loop().time())
            held.append(slot)
            return slot
        return None

    async def enter(self) -> Slot:
        """Wait for a slot, first come first served; it is handed over by ``leave``
        or by parking."""
        slot = self.try_enter()
        if slot is not None:
            return slot
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Slot] = loop.create_future()
        self._waiters.append(waiter)
        self._arm(loop)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.leave(waiter.result())  # handed over, then cancelled: pass it on
            raise

    def leave(self, slot: Slot) -> None:
        if not slot.held:                    # parked: counted no more
            return
        slot.held = False
        self._free()

    def _free(self) -> None:
        """One slot stops counting: hand it to the first waiter, else count it free."""
        loop_time = None
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                if loop_time is None:
                    loop_time = asyncio.get_running_loop().time()
                slot = Slot(loop_time)
                self._held.append(slot)
                waiter.set_result(slot)      # the slot goes to the waiter as it is
                return
        self.in_flight -= 1

    def _park(self, now: float) -> None:
        """Slots taken PARKED_S ago or earlier stop counting (theory 2)."""
        held = self._held
        while held and (not held[0].held or held[0].start <= now - PARKED_S):
            slot = held.popleft()
            if slot.held:
                slot.held = False
                self._free()

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        """While requests wait, park slots as they come of age."""
        if self._timer is not None or not self._waiters:
            return
        oldest = next((s.start for s in self._held if s.held), loop.time())
        self._timer = loop.call_at(oldest + PARKED_S, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        self._park(loop.time())
        self._arm(loop)
