"""The console's HTTP server over real sockets on 127.0.0.1, with a fake
ClusterReader: status codes for good, bad and hostile requests, error pages
for cluster failures, and the server still serving after each."""

from __future__ import annotations

import asyncio
from typing import Any

from client.errors import KafkaConnectionError
from protocol.why_model import BrokerStatus
from tools.console.data import NotFound
from tools.console.model import BrokerRow, Overview
from protocol.http_head import MAX_HEAD_BYTES
from tools.console.server import ConsoleServer
from tools.console.why_source import WhyAnswer


class FakeReader:
    async def overview(self) -> Overview:
        return Overview("cid", 1, [BrokerRow(1, "127.0.0.1", 9001, None,
                                             WhyAnswer(BrokerStatus(1, "CONNECTED", True, 1, 1)))],
                        1, 1, 0, 0)

    async def topic(self, name: str) -> Any:
        raise NotFound(f"topic {name!r} does not exist")

    async def groups(self) -> Any:
        raise KafkaConnectionError("connection refused <x>")

    async def topics(self) -> Any:
        raise RuntimeError("a bug")


async def exchange(port: int, data: bytes, *, close_write: bool = False) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if close_write:
        writer.write_eof()
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


def status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response else 0


def test_server_statuses_and_survival() -> None:
    async def scenario() -> None:
        server = ConsoleServer(FakeReader())  # type: ignore[arg-type]
        _, port = await server.start("127.0.0.1", 0)
        try:
            ok = await exchange(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status(ok) == 200
            head, body = ok.split(b"\r\n\r\n", 1)
            assert b"Connection: close" in head and b"Content-Security-Policy" in head
            assert f"Content-Length: {len(body)}".encode() in head
            assert b"CONNECTED" in body
            head_only = await exchange(port, b"HEAD / HTTP/1.1\r\n\r\n")
            assert status(head_only) == 200 and head_only.endswith(b"\r\n\r\n")
            assert status(await exchange(port, b"GET /health HTTP/1.1\r\n\r\n")) == 200
            assert status(await exchange(port, b"GET /nope HTTP/1.1\r\n\r\n")) == 404
            missing = await exchange(port, b"GET /topic?name=%3Cb%3E HTTP/1.1\r\n\r\n")
            assert status(missing) == 404 and b"&#x27;&lt;b&gt;&#x27; does not exist" in missing
            assert status(await exchange(port, b"GET /topic HTTP/1.1\r\n\r\n")) == 400
            bad_p = b"GET /partition?topic=t&p=x HTTP/1.1\r\n\r\n"
            assert status(await exchange(port, bad_p)) == 400
            down = await exchange(port, b"GET /groups HTTP/1.1\r\n\r\n")
            assert status(down) == 502 and b"connection refused &lt;x&gt;" in down
            assert status(await exchange(port, b"GET /topics HTTP/1.1\r\n\r\n")) == 500
            # hostile input
            assert status(await exchange(port, b"\x00\xff garbage\r\n\r\n")) == 400
            assert status(await exchange(port, b"POST / HTTP/1.1\r\n\r\n")) == 405
            assert status(await exchange(port, b"GET /" + b"a" * (MAX_HEAD_BYTES + 10))) == 431
            assert status(await exchange(port, b"GET / HTTP/1.1\r\nX: " + b"b" * 40000
                                         + b"\r\n\r\n")) == 431
            assert status(await exchange(port, b"GET / HTTP/1.1\r\n", close_write=True)) == 400
            assert await exchange(port, b"", close_write=True) == b""
            # still serving
            assert status(await exchange(port, b"GET / HTTP/1.0\r\n\r\n")) == 200
        finally:
            await server.close()

    asyncio.run(scenario())
