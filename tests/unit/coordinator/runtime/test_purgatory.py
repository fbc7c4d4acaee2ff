"""Purgatory verbs with a fake clock: complete on check, expire on time, exactly once."""

from __future__ import annotations

import asyncio

from broker.replication.purgatory import DelayedFetch, DelayedProduce
from coordinator.runtime.purgatory import DelayedOperation, Purgatory
from protocol.errors import ErrorCode

from tests.unit.broker.replication.fakes import FakeClock


class Op(DelayedOperation):
    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.completions = 0
        self.expirations = 0

    def try_complete(self) -> bool:
        return self.ready and self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        self.expirations += 1


def test_completes_at_once_when_ready() -> None:
    clock = FakeClock()
    p = Purgatory("t", clock)
    op = Op(100)
    op.ready = True
    assert p.try_complete_else_watch(op, ["a"])
    assert op.completions == 1 and p.watched() == 0 and clock.pending == 0


def test_check_and_complete_unwatches_every_key_and_cancels_timer() -> None:
    clock = FakeClock()
    p = Purgatory("t", clock)
    op = Op(100)
    assert not p.try_complete_else_watch(op, ["a", "b"])
    assert p.watched("a") == 1 and p.watched("b") == 1 and clock.pending == 1
    assert p.check_and_complete("a") == 0
    op.ready = True
    assert p.check_and_complete("b") == 1
    assert p.watched() == 0 and clock.pending == 0
    clock.advance(1000)
    assert (op.completions, op.expirations) == (1, 0)


def test_expiry_completes_once_then_on_expiration() -> None:
    clock = FakeClock()
    p = Purgatory("t", clock)
    op = Op(100)
    p.try_complete_else_watch(op, ["a"])
    clock.advance(99)
    assert op.completions == 0
    clock.advance(1)
    assert (op.completions, op.expirations, op.expired) == (1, 1, True)
    op.ready = True
    assert p.check_and_complete("a") == 0 and op.completions == 1


def test_delayed_produce_times_out_pending_partitions() -> None:
    async def main() -> None:
        clock = FakeClock()
        p = Purgatory("produce", clock)
        hw = {("t", 0): 0, ("t", 1): 0}
        fut = asyncio.get_running_loop().create_future()
        op = DelayedProduce(500, {("t", 0): 5, ("t", 1): 3},
                            lambda tp, req: (hw[tp] >= req, ErrorCode.NONE), fut)
        assert not p.try_complete_else_watch(op, list(hw))
        hw[("t", 1)] = 3
        p.check_and_complete(("t", 1))
        assert not fut.done()
        clock.advance(500)
        assert fut.result() == {("t", 0): ErrorCode.REQUEST_TIMED_OUT, ("t", 1): ErrorCode.NONE}
    asyncio.run(main())


def test_delayed_fetch_completes_on_min_bytes() -> None:
    async def main() -> None:
        clock = FakeClock()
        p = Purgatory("fetch", clock)
        available = [0]
        fut = asyncio.get_running_loop().create_future()
        op = DelayedFetch(1000, 10, {"k": 0}, lambda _tp: (available[0], False), lambda: available[0],
                          fut)
        assert not p.try_complete_else_watch(op, ["k"])
        available[0] = 5
        p.check_and_complete("k")
        assert not fut.done()
        available[0] = 12
        p.check_and_complete("k")
        assert fut.result() == 12 and clock.pending == 0
    asyncio.run(main())


def test_delayed_fetch_remeasures_only_the_changed_partition() -> None:
    async def main() -> None:
        clock = FakeClock()
        p = Purgatory("fetch", clock)
        keys = [("t", i) for i in range(1000)]
        available = dict.fromkeys(keys, 0)
        probed: list[tuple[str, int]] = []

        def probe(tp: tuple[str, int]) -> tuple[int, bool]:
            probed.append(tp)
            return available[tp], False
        fut = asyncio.get_running_loop().create_future()
        op = DelayedFetch(1000, 10, dict(available), probe, lambda: "read", fut)
        p.watch(op, keys)
        available[("t", 3)] = 4
        p.check_and_complete(("t", 3))
        available[("t", 7)] = 5
        p.check_and_complete(("t", 7))
        assert probed == [("t", 3), ("t", 7)] and not fut.done()
        available[("t", 3)] = 6        # re-measured, not added twice: 6 + 5 >= 10
        p.check_and_complete(("t", 3))
        assert fut.result() == "read" and p.watched() == 0
    asyncio.run(main())


def test_delayed_fetch_answers_at_once_on_an_error_in_one_partition() -> None:
    async def main() -> None:
        p = Purgatory("fetch", FakeClock())
        fut = asyncio.get_running_loop().create_future()
        op = DelayedFetch(1000, 1 << 20, {"a": 0, "b": 0},
                          lambda tp: (0, tp == "b"), lambda: "answer", fut)
        p.watch(op, ["a", "b"])
        assert p.check_and_complete("a") == 0
        assert p.check_and_complete("b") == 1 and fut.result() == "answer"
    asyncio.run(main())


def test_delayed_produce_checks_only_the_changed_partition() -> None:
    async def main() -> None:
        p = Purgatory("produce", FakeClock())
        hw = {("t", i): 0 for i in range(100)}
        checked: list[tuple[str, int]] = []

        def check(tp: tuple[str, int], required: int) -> tuple[bool, int]:
            checked.append(tp)
            return hw[tp] >= required, ErrorCode.NONE
        fut = asyncio.get_running_loop().create_future()
        op = DelayedProduce(500, dict.fromkeys(hw, 1), check, fut)
        assert not p.try_complete_else_watch(op, list(hw))
        checked.clear()
        for tp in hw:
            hw[tp] = 1
            p.check_and_complete(tp)
        assert checked == list(hw)       # one check per change, not one per pending partition
        assert fut.result() == dict.fromkeys(hw, ErrorCode.NONE)
    asyncio.run(main())


def test_completed_ops_leave_watch_lists_lazily_and_in_a_sweep() -> None:
    clock = FakeClock()
    p = Purgatory("t", clock)
    p.PURGE_AFTER = 10
    first = Op(100)
    p.try_complete_else_watch(first, ["a", "b", "c"])
    first.ready = True
    assert p.check_and_complete("a") == 1
    # completed: no longer counted, dropped from "b" when "b" is next checked
    assert p.watched() == 0 and p.watched("b") == 0
    assert p.check_and_complete("b") == 0 and "b" not in p._watchers and "c" in p._watchers
    quiet = Op(100)
    p.watch(quiet, ["quiet"])    # only live ops here: the sweep need not look
    ops = [Op(100) for _ in range(4)]
    for op in ops:
        p.try_complete_else_watch(op, ["x", "y", "z"])
    visited: list[object] = []

    class Spy(dict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            visited.append(key)
            return super().get(key, default)
    p._watchers = Spy(p._watchers)
    for op in ops[:3]:
        op.force_complete()      # 2 + 9 stale entries: past PURGE_AFTER, swept
    assert set(p._watchers) == {"x", "y", "z", "quiet"} and p._stale == 0
    assert "quiet" not in visited and {"b", "c", "x", "y", "z"} <= set(visited)
    assert all(list(p._watchers[k]) == [ops[3]] for k in 'xyz')
    ops[3].force_complete()
    assert p._stale == 3 and p.watched() == 1


def test_a_completed_fetch_left_in_idle_watch_lists_keeps_nothing_alive() -> None:
    """A follower's fetch op is watched under every partition of its session and
    completes on the one that changed; the entries under the idle ones stay
    until a sweep, and must not keep the read result (or its closures) alive."""
    import gc
    import weakref

    class Result:
        pass

    async def main() -> None:
        p = Purgatory("fetch", FakeClock())
        refs = []
        for _ in range(3):
            result = Result()
            refs.append(weakref.ref(result))
            fut = asyncio.get_running_loop().create_future()
            op = DelayedFetch(500, 1, {"busy": 0, "idle": 0},
                              lambda tp: (1 if tp == "busy" else 0, False),
                              lambda result=result: result, fut)  # type: ignore[misc]
            p.watch(op, ["busy", "idle"])
            del result
            assert p.check_and_complete("busy") == 1
            assert isinstance(fut.result(), Result)
            del fut, op
        assert len(p._watchers["idle"]) == 3      # stale entries, not yet swept
        gc.collect()
        assert [r() for r in refs] == [None, None, None]
    asyncio.run(main())

