"""Broker registration after a kill -9 (issue 16, item 5), over FakeZk.

The dead process's ZooKeeper session still holds /brokers/ids/<id> (and
/controller, if it was the controller) until ZooKeeper expires it. A
``FakeZk`` standing for that session holds the znodes here; ``stop()`` on it is
the expiry: its ephemerals go together and the watches fire. With
``replace_own`` (what the broker passes) a registration naming our endpoints is
replaced at once; one naming others is waited for as without it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

import pytest

from controller import ClusterStore, Controller, NodeExistsError
from controller import zk as zk_module
from controller import zkdata as zd
from tests.unit.controller.fake_zk import FakeZk, FakeZkServer

ENDPOINT = "PLAINTEXT://127.0.0.1:9093"
WAITING = "is still registered in ZooKeeper by session"
WENT_AWAY = "the stale registration of broker id 1 went away after"
REPLACED = "with our own endpoints (PLAINTEXT://127.0.0.1:9093): this broker's previous run"


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 20))


async def dead_session(server: FakeZkServer, broker_id: int, *, controller: bool = False,
                       endpoint: str = ENDPOINT) -> FakeZk:
    """What a kill -9'd broker leaves: its session, its registration (and /controller)."""
    old = FakeZk(server)
    store = ClusterStore("fake", client=old)
    await store.connect()
    await store.register_broker(broker_id, [endpoint])
    if controller:
        await store.register_controller(broker_id)
    return old


async def fresh_store(server: FakeZkServer, session_timeout_ms: int = 18000) -> ClusterStore:
    store = ClusterStore("fake", session_timeout_ms, client=FakeZk(server))
    await store.connect()
    return store


class Ticker:
    """Counts event-loop turns every 10 ms: a blocked loop would not tick."""

    def __init__(self) -> None:
        self.ticks = 0
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.01)
            self.ticks += 1


def lines(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_registration_waits_for_the_dead_sessions_znode_then_succeeds(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pybroker.zk")

    async def body() -> None:
        server = FakeZkServer()
        old = await dead_session(server, 1)
        store = await fresh_store(server, session_timeout_ms=6000)
        loop = asyncio.get_running_loop()
        ticker = Ticker()

        def expire() -> None:
            # ZooKeeper expires the dead session 0.4 s on, once the loop has also ticked
            # 20 times meanwhile: on a slow machine the ticks take longer, not fewer
            if ticker.ticks >= 20:
                old.stop()
            else:
                loop.call_later(0.01, expire)
        loop.call_later(0.4, expire)
        began = loop.time()
        epoch = await store.register_broker(1, [ENDPOINT])
        took = loop.time() - began
        ticker.task.cancel()
        assert 0.35 < took < 1.5, took          # woken by the watch, not the 9 s budget
        assert ticker.ticks >= 20               # the loop ran meanwhile
        st = server.nodes[zd.broker_path(1)]
        assert st.owner == store.zk.session_id() and epoch == st.czxid == store.broker_epoch
        (waiting,) = lines(caplog, WAITING)     # logged once, however long the wait
        assert "broker id 1" in waiting and ENDPOINT in waiting
        assert "most likely this broker's own session from before it died" in waiting
        assert "waiting up to 9.0 s (zookeeper.session.timeout.ms=6000 plus 3.0 s)" in waiting
        assert len(lines(caplog, WENT_AWAY)) == 1
        assert lines(caplog, "registered broker 1 at")
    run(body)


@pytest.mark.parametrize("replace_own", [False, True])
def test_registration_gives_up_when_the_znode_stays(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        replace_own: bool) -> None:
    """Other endpoints: waited out and refused, whether or not our own stale
    registration would be replaced (``replace_own``, what the broker passes)."""
    caplog.set_level(logging.INFO, logger="pybroker.zk")
    monkeypatch.setattr(zk_module, "STALE_REGISTRATION_MARGIN_S", 0.2)

    async def body() -> None:
        server = FakeZkServer()
        other = await dead_session(server, 1,   # in truth a live broker with the same id
                                   endpoint="PLAINTEXT://10.0.0.7:9092")
        store = await fresh_store(server, session_timeout_ms=400)
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(NodeExistsError) as e:
            await store.register_broker(1, [ENDPOINT], replace_own=replace_own)
        took = loop.time() - began
        assert 0.55 < took < 1.5, took          # the session timeout plus the margin
        msg = str(e.value)
        assert msg.startswith("broker id 1 is already registered by another session")
        assert f"0x{other.session_id():x}" in msg and "still after waiting" in msg
        assert "broker.id=1?" in msg and "PLAINTEXT://10.0.0.7:9092" in msg
        assert server.nodes[zd.broker_path(1)].owner == other.session_id()
        assert store.broker_epoch == -1
        (waiting,) = lines(caplog, WAITING)
        assert f"not our endpoints ({ENDPOINT}): another broker may have this id" in waiting
        assert not lines(caplog, WENT_AWAY) and not lines(caplog, REPLACED)
    run(body)


def test_own_live_registration_and_a_free_id_need_no_wait(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pybroker.zk")

    async def body() -> None:
        server = FakeZkServer()
        store = await fresh_store(server)
        first = await store.register_broker(1, [ENDPOINT])
        assert await store.register_broker(1, [ENDPOINT]) == first   # ours already
        assert not lines(caplog, WAITING)
    run(body)


def test_cancelling_ends_the_wait() -> None:
    """SIGTERM during the wait: Broker._register cancels the registration."""
    async def body() -> None:
        server = FakeZkServer()
        old = await dead_session(server, 1)
        store = await fresh_store(server)
        task = asyncio.ensure_future(store.register_broker(1, [ENDPOINT]))
        await asyncio.sleep(0.2)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 0.5)
        old.stop()
        await asyncio.sleep(0.3)                # nothing registers behind our back
        assert zd.broker_path(1) not in server.nodes and store.broker_epoch == -1
    run(body)


def test_our_own_dead_registration_is_replaced_at_once_and_outlives_the_expiry(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pybroker.zk")

    async def body() -> None:
        server = FakeZkServer()
        await dead_session(server, 2, controller=True,    # a live controller, broker 2
                           endpoint="PLAINTEXT://127.0.0.1:9094")
        old = await dead_session(server, 1)
        old_epoch = server.nodes[zd.broker_path(1)].czxid
        store = await fresh_store(server, session_timeout_ms=6000)
        loop = asyncio.get_running_loop()
        began = loop.time()
        epoch = await store.register_broker(1, [ENDPOINT], replace_own=True)
        assert loop.time() - began < 0.3                 # no wait for the expiry
        st = server.nodes[zd.broker_path(1)]
        assert st.owner == store.zk.session_id() and epoch == st.czxid == store.broker_epoch
        assert epoch != old_epoch                        # the controller sees a restart
        (replaced,) = lines(caplog, REPLACED)
        assert f"session 0x{old.session_id():x}" in replaced
        assert not lines(caplog, WAITING)
        old.stop()                                       # the dead session expires later:
        await asyncio.sleep(0.05)
        assert server.nodes[zd.broker_path(1)].owner == store.zk.session_id()   # still ours
    run(body)


def test_with_no_controller_or_a_dead_one_our_own_registration_is_still_replaced(
        caplog: pytest.LogCaptureFixture) -> None:
    """Nobody sees the restart then; the next controller finds it from the zxids
    (controller.restarts.restarted_leaders). The former controller's /controller stays
    with its dead session until the expiry."""
    caplog.set_level(logging.INFO, logger="pybroker.zk")

    async def body() -> None:
        server = FakeZkServer()
        old = await dead_session(server, 1, controller=True)
        store = await fresh_store(server)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await store.register_broker(1, [ENDPOINT], replace_own=True)
        assert loop.time() - began < 0.3
        assert lines(caplog, REPLACED) and not lines(caplog, WAITING)
        assert server.nodes[zd.broker_path(1)].owner == store.zk.session_id()
        assert server.nodes[zd.CONTROLLER].owner == old.session_id()
    run(body)


class NullTransport:
    async def send(self, broker_id: int, host: str, port: int, header: Any, body: Any) -> Any:
        from protocol.spec import api
        return api(header.api_key).response.new()


def test_former_controller_waits_then_campaigns_once_its_controller_znode_goes() -> None:
    async def body() -> None:
        server = FakeZkServer()
        old = await dead_session(server, 1, controller=True)
        assert json.loads(server.nodes[zd.CONTROLLER].data)["brokerid"] == 1
        store = await fresh_store(server)
        asyncio.get_running_loop().call_later(0.3, old.stop)
        await store.register_broker(1, [ENDPOINT])
        assert zd.CONTROLLER not in server.nodes   # went with the dead session
        controller = Controller(1, store, NullTransport())
        await controller.start()
        for _ in range(50):
            await controller.idle()
            if controller.is_active:
                break
            await asyncio.sleep(0.02)
        assert controller.is_active and controller.epoch == 2
        assert server.nodes[zd.CONTROLLER].owner == store.zk.session_id()
        await controller.stop()
        await store.close()
    run(body)
