"""The metrics endpoint over a real socket on 127.0.0.1: GET /metrics answers the
exposition, other paths 404, other methods 405, malformed heads 400, oversized
heads 431, a failing scrape 500; the server keeps serving after each."""

from __future__ import annotations

import asyncio

import pytest

from broker.metrics.http_endpoint import MetricsEndpoint, parse_listener
from protocol.http_head import MAX_HEAD_BYTES


async def _ask(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return status, headers, body


def test_endpoint_answers() -> None:
    async def run() -> None:
        calls = {"n": 0, "fail": False}

        def scrape() -> str:
            calls["n"] += 1
            if calls["fail"]:
                raise RuntimeError("collector broke")
            return "# TYPE up gauge\nup 1\n"

        ep = MetricsEndpoint("127.0.0.1", 0, scrape)
        await ep.start()
        try:
            status, headers, body = await _ask(ep.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == 200 and body == b"# TYPE up gauge\nup 1\n"
            assert headers["content-type"].startswith("text/plain; version=0.0.4")
            assert headers["content-length"] == str(len(body))
            status, _, _ = await _ask(ep.port, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n")
            assert status == 200
            status, _, _ = await _ask(ep.port, b"GET / HTTP/1.1\r\n\r\n")
            assert status == 404
            status, headers, _ = await _ask(ep.port, b"POST /metrics HTTP/1.1\r\n\r\n")
            assert status == 405 and "GET" in headers["allow"]
            status, _, _ = await _ask(ep.port, b"garbage\r\n\r\n")
            assert status == 400
            status, _, _ = await _ask(ep.port, b"GET /metrics HTTP/2.0\r\n\r\n")
            assert status == 505
            big = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD_BYTES + 10) + b"\r\n\r\n"
            status, _, _ = await _ask(ep.port, big)
            assert status == 431
            status, _, body = await _ask(ep.port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
            assert status == 200 and body == b""
            calls["fail"] = True
            status, _, _ = await _ask(ep.port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert status == 500
            calls["fail"] = False
            status, _, _ = await _ask(ep.port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert status == 200           # still serving
            # a client that connects and says nothing, then goes: no harm
            _r, w = await asyncio.open_connection("127.0.0.1", ep.port)
            w.close()
            status, _, _ = await _ask(ep.port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert status == 200
        finally:
            await ep.stop()
    asyncio.run(run())


def test_async_scrape_and_gzip() -> None:
    async def run() -> None:
        text = "x 1\n" * 40_000

        async def scrape() -> str:
            return text
        ep = MetricsEndpoint("127.0.0.1", 0, scrape)
        await ep.start()
        try:
            status, headers, body = await _ask(
                ep.port, b"GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
            import gzip
            assert status == 200 and headers["content-encoding"] == "gzip"
            assert gzip.decompress(body).decode() == text
        finally:
            await ep.stop()
    asyncio.run(run())


def test_parse_listener() -> None:
    assert parse_listener("prometheus.listener", "127.0.0.1:9404") == ("127.0.0.1", 9404)
    assert parse_listener("prometheus.listener", ":9404") == ("", 9404)
    assert parse_listener("prometheus.listener", "[::1]:0") == ("::1", 0)
    for bad in ("9404", "h:x", "h:99999", "a b:1"):
        with pytest.raises(ValueError, match="prometheus.listener"):
            parse_listener("prometheus.listener", bad)


def test_broker_config_key() -> None:
    from broker.config import BrokerConfig, ConfigError
    assert BrokerConfig.from_properties({}).prometheus_listener is None       # off by default
    cfg = BrokerConfig.from_properties({"prometheus.listener": "127.0.0.1:9404"})
    assert cfg.prometheus_listener == "127.0.0.1:9404"
    with pytest.raises(ConfigError, match=r"Invalid value '9404' for configuration "
                                          r"prometheus\.listener"):
        BrokerConfig.from_properties({"prometheus.listener": "9404"})
