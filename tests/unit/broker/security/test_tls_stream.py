"""TlsStream (TLS over memory BIOs on an accepted stream) on a loopback socket, with a
throwaway CA and certificate made by the openssl command: a large response arrives
whole, the client's close_notify ends the stream at once (an asyncio TLS client waits
for ours in close()), a plaintext client fails the handshake, and the peer certificate
of a mutual-TLS client is seen."""

from __future__ import annotations

import asyncio
import ssl
import time

import pytest

from broker.security.tls_stream import TlsStream
from tests.integration.security.certs import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), names=("broker", "alice"))


def server_context(pki: Pki, client_auth: bool = False) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.keystore("broker"))
    if client_auth:
        ctx.load_verify_locations(pki.ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


async def serve(ctx: ssl.SSLContext, handle) -> asyncio.Server:  # type: ignore[no-untyped-def]
    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stream = TlsStream(reader, writer, ctx)
        try:
            await stream.handshake(5)
        except (ssl.SSLError, ConnectionError, TimeoutError) as e:
            await handle(None, e)
            writer.close()
            return
        await handle(stream, None)
    return await asyncio.start_server(accept, "127.0.0.1", 0)


def test_echo_of_a_large_response_and_a_prompt_close(pki: Pki) -> None:
    payload = bytes(range(256)) * (6 * 4096)         # 6 MiB, written as several chunks

    async def go() -> float:
        async def handle(stream: TlsStream | None, _e: Exception | None) -> None:
            assert stream is not None
            assert await stream.read(100) == b"hi"
            stream.writelines([payload[:10], memoryview(payload)[10:], b"!"])
            await stream.drain()
            assert await stream.read(100) == b""       # the client's close_notify
            stream.close()
        server = await serve(server_context(pki), handle)
        port = server.sockets[0].getsockname()[1]
        client = ssl.create_default_context(cafile=pki.ca)
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        writer.write(b"hi")
        got = await reader.readexactly(len(payload) + 1)
        assert got == payload + b"!"
        t0 = time.monotonic()
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 10)
        server.close()
        return time.monotonic() - t0

    assert asyncio.run(go()) < 2.0


def test_plaintext_client_fails_the_handshake(pki: Pki) -> None:
    async def go() -> Exception | None:
        seen: list[Exception | None] = []

        async def handle(_s: TlsStream | None, e: Exception | None) -> None:
            seen.append(e)
        server = await serve(server_context(pki), handle)
        port = server.sockets[0].getsockname()[1]
        _r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"\x00\x00\x00\x10 not a client hello")
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.05)
        w.close()
        server.close()
        return seen[0] if seen else None

    assert isinstance(asyncio.run(go()), ssl.SSLError)


def test_mutual_tls_peer_certificate(pki: Pki) -> None:
    async def go() -> dict:  # type: ignore[type-arg]
        certs: list[dict] = []  # type: ignore[type-arg]

        async def handle(stream: TlsStream | None, e: Exception | None) -> None:
            assert stream is not None, e
            certs.append(stream.get_extra_info("peercert"))
            stream.close()
        server = await serve(server_context(pki, client_auth=True), handle)
        port = server.sockets[0].getsockname()[1]
        client = ssl.create_default_context(cafile=pki.ca)
        client.load_cert_chain(pki.keystore("alice"))
        _r, w = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        for _ in range(100):
            if certs:
                break
            await asyncio.sleep(0.05)
        w.close()
        server.close()
        return certs[0]

    subject = dict(rdn[0] for rdn in asyncio.run(go())["subject"])
    assert subject["commonName"] == "alice"


