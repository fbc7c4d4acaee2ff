"""broker/dynamic_config/listeners.py: the checks on listeners, advertised.listeners and
listener.security.protocol.map (INVALID_CONFIG naming key and value, per broker only),
and ``sync`` opening and closing real sockets on 127.0.0.1 and rewriting the
registration (fakes.FakeZk records it)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from broker.config import BrokerConfig
from broker.dynamic_config import keys, listeners
from broker.security.reconfigure import ReconfigureError
from tests.unit.broker.dynamic_config.fakes import FakeHost
from tests.unit.polling import until

if TYPE_CHECKING:
    from broker.server import KafkaServer

MAP = "listener.security.protocol.map"


def fake_broker(**static: Any) -> FakeHost:
    return FakeHost(BrokerConfig(**{"listeners": "PLAINTEXT://127.0.0.1:9092", "broker_id": 0,
                                    **static}))


def refused(broker: FakeHost, updates: dict[str, str | None], *words: str) -> None:
    with pytest.raises(ReconfigureError) as e:
        keys.check(updates, per_broker=True, broker=broker)
    assert e.value.invalid_config, e.value
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_adding_a_listener_with_its_protocol_is_accepted() -> None:
    b = fake_broker()
    keys.check({"listeners": "PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
                MAP: "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"}, per_broker=True, broker=b)


def test_listener_keys_are_per_broker_only() -> None:
    for key in ("listeners", "advertised.listeners", MAP):
        with pytest.raises(ReconfigureError, match="broker id must be specified: " + key) as e:
            keys.check({key: "PLAINTEXT://127.0.0.1:1"}, per_broker=False)
        assert not e.value.invalid_config


def test_a_listener_without_a_protocol_is_refused_naming_the_map() -> None:
    refused(fake_broker(), {"listeners": "PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093"},
            MAP, "EXTERNAL")


def test_duplicate_names_bad_syntax_and_advertised_outside_listeners_are_refused() -> None:
    b = fake_broker()
    refused(b, {"listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"},
            "listeners", "PLAINTEXT")
    refused(b, {"listeners": "PLAINTEXT//127.0.0.1:9092"}, "listeners", "PLAINTEXT//127.0.0.1")
    refused(b, {"advertised.listeners": "PLAINTEXT://127.0.0.1:9092,OTHER://127.0.0.1:1"},
            "advertised.listeners", "subset")


def test_the_inter_broker_listener_cannot_be_removed_or_moved() -> None:
    b = fake_broker(listeners="PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
                    listener_security_protocol_map="PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT")
    refused(b, {"listeners": "EXTERNAL://127.0.0.1:9093"}, "inter-broker listener PLAINTEXT")
    refused(b, {"listeners": "PLAINTEXT://127.0.0.1:9999,EXTERNAL://127.0.0.1:9093"},
            "inter-broker", "PLAINTEXT://127.0.0.1:9999")
    keys.check({"listeners": "PLAINTEXT://127.0.0.1:9092"}, per_broker=True, broker=b)


def test_the_control_plane_listener_cannot_be_removed() -> None:
    b = fake_broker(listeners="PLAINTEXT://127.0.0.1:9092,CONTROL://127.0.0.1:9094",
                    listener_security_protocol_map="PLAINTEXT:PLAINTEXT,CONTROL:PLAINTEXT",
                    control_plane_listener_name="CONTROL")
    refused(b, {"listeners": "PLAINTEXT://127.0.0.1:9092"}, "control-plane listener CONTROL")


def test_protocol_of_an_existing_listener_cannot_change_and_tls_needs_a_keystore() -> None:
    b = fake_broker(listeners="PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
                    listener_security_protocol_map="PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT")
    refused(b, {MAP: "PLAINTEXT:PLAINTEXT,EXTERNAL:SSL"}, "Security protocol cannot be updated")
    refused(fake_broker(), {"listeners": "PLAINTEXT://127.0.0.1:9092,SECURE://127.0.0.1:9095",
                            MAP: "PLAINTEXT:PLAINTEXT,SECURE:SSL"},
            "listener SECURE cannot be started")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connects(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


async def closes(port: int) -> None:
    """Wait for the listener on ``port`` to close (listeners.CLOSE_DELAY_S after its
    removal). A connect to 127.0.0.1 is answered by the kernel at once, so polling it on
    the loop blocks nothing."""
    await until(lambda: not _connects(port), f"port {port} no longer accepts")


@contextlib.asynccontextmanager
async def with_external() -> AsyncIterator[tuple[FakeHost, KafkaServer, int]]:
    """A fake broker serving PLAINTEXT on an ephemeral port, then synced to a config
    that adds EXTERNAL on a free port: (broker, the PLAINTEXT server, EXTERNAL's
    port). Every server still open at the end is stopped."""
    from broker.server import KafkaServer

    b = fake_broker(listeners="PLAINTEXT://127.0.0.1:0")
    first = KafkaServer(b, b.listeners[0], b.listener_security["PLAINTEXT"], b.network_limits)
    await first.start()
    b.servers.append(first)
    b.advertised = [b.listeners[0].__class__("PLAINTEXT", "127.0.0.1", first.port)]
    port = _free_port()
    try:
        b.config = BrokerConfig(
            listeners=f"PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:{port}",
            listener_security_protocol_map="PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT")
        await listeners.sync(b)
        yield b, first, port
    finally:
        for s in b.servers:
            await s.stop()


def test_sync_opens_and_closes_listeners_and_rewrites_the_registration() -> None:
    async def go() -> None:
        async with with_external() as (b, first, port):
            registered = b.cluster.registrations
            assert await asyncio.to_thread(_connects, port)
            assert registered[-1] == [f"PLAINTEXT://127.0.0.1:{first.port}",
                                      f"EXTERNAL://127.0.0.1:{port}"]
            b.config = BrokerConfig(listeners="PLAINTEXT://127.0.0.1:0")
            await listeners.sync(b)
            # closed in the background, once answers in flight on it went out
            assert [s.endpoint.name for s in b.servers] == ["PLAINTEXT"]
            await closes(port)
            assert registered[-1] == [f"PLAINTEXT://127.0.0.1:{first.port}"]
            assert [s.endpoint.name for s in b.servers] == ["PLAINTEXT"]
            assert await asyncio.to_thread(_connects, first.port)
    asyncio.run(go())


def test_two_syncs_of_one_change_close_the_listener_once() -> None:
    """The alter's own sync and its notification's arrive together; the second waits
    for the first and finds nothing left to do (before: both closed the listener, and
    the second's list.remove failed)."""
    async def go() -> None:
        async with with_external() as (b, _first, port):
            assert [s.endpoint.name for s in b.servers] == ["PLAINTEXT", "EXTERNAL"]
            registrations = len(b.cluster.registrations)
            b.config = BrokerConfig(listeners="PLAINTEXT://127.0.0.1:0")
            results = await asyncio.gather(listeners.sync(b), listeners.sync(b),
                                           return_exceptions=True)
            assert results == [None, None]
            assert [s.endpoint.name for s in b.servers] == ["PLAINTEXT"]
            await closes(port)
            assert len(b.cluster.registrations) == registrations + 1   # rewritten once
    asyncio.run(go())
