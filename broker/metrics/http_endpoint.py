"""The metrics endpoint: ``GET /metrics`` over HTTP/1.1 on the broker's event loop
(``asyncio.start_server``), enabled by ``prometheus.listener=HOST:PORT``.

Per connection: 1. read the request head, at most ``MAX_HEAD_BYTES`` (longer:
431) within ``READ_TIMEOUT_S`` (else closed); 2. parse it (``parse_head``;
malformed: 400, other methods 405: protocol/http_head.py, shared with the web
console); 3. ``GET``/``HEAD /metrics`` answers the exposition, other
paths 404; 4. close. One request per connection keeps the
server to a few lines; Prometheus opens a connection per scrape when told to
close.

A failure while collecting answers 500 and is logged; nothing raised in a
connection's task reaches the broker. At most ``MAX_CONNECTIONS`` are served
at once (more are closed at once), so a flood of scrapers costs little.
Scrapes run one at a time (a lock): two concurrent scrapes would only double
the work.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections.abc import Awaitable, Callable

from broker.metrics.exposition import CONTENT_TYPE
from protocol.http_head import MAX_HEAD_BYTES, HttpError, encode_response, parse_head

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 16
METRICS_PATH = "/metrics"
GZIP_ABOVE = 64 * 1024        # bodies above this are gzipped when the client accepts it


class MetricsEndpoint:
    """``await start()``; ``port`` is the bound port; ``await stop()``."""

    def __init__(self, host: str, port: int, scrape: Callable[[], Awaitable[str] | str]) -> None:
        self.host = host
        self.port = port
        self._scrape = scrape
        self._server: asyncio.AbstractServer | None = None
        self._open = 0
        self._scrape_lock = asyncio.Lock()
        self.scrapes = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host or None, self.port,
                                                  limit=MAX_HEAD_BYTES + 2)
        sockets = self._server.sockets or ()
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        log.info("Prometheus metrics on http://%s:%d%s", self.host or "0.0.0.0", self.port,
                 METRICS_PATH)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            except (TimeoutError, asyncio.TimeoutError):
                pass
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open += 1
        try:
            await self._answer(reader, writer)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("metrics endpoint: request failed")
        finally:
            self._open -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            request = parse_head(head)
        except (TimeoutError, asyncio.TimeoutError):
            return
        except asyncio.LimitOverrunError:
            writer.write(encode_response(431, b"request head too large\n"))
            await writer.drain()
            return
        except asyncio.IncompleteReadError as e:
            if e.partial.strip():
                writer.write(encode_response(400, b"incomplete request\n"))
                await writer.drain()
            return
        except HttpError as e:
            allow = {"Allow": "GET, HEAD"} if e.status == 405 else None
            writer.write(encode_response(e.status, f"{e}\n".encode(), headers=allow))
            await writer.drain()
            return
        head_only = request.method == "HEAD"
        if request.path != METRICS_PATH:
            writer.write(encode_response(404, b"not found; try /metrics\n", head_only=head_only))
        else:
            try:
                async with self._scrape_lock:
                    text = self._scrape()
                    if not isinstance(text, str):
                        text = await text
                    self.scrapes += 1
            except Exception:
                log.exception("metrics endpoint: collecting the metrics failed")
                writer.write(encode_response(500, b"collecting the metrics failed\n"))
            else:
                body = text.encode("utf-8")
                extra: dict[str, str] = {}
                if len(body) > GZIP_ABOVE and "gzip" in request.headers.get(
                        "accept-encoding", ""):
                    body = gzip.compress(body, compresslevel=1)
                    extra["Content-Encoding"] = "gzip"
                writer.write(encode_response(200, body, CONTENT_TYPE, head_only=head_only,
                                            headers=extra))
        await writer.drain()


def parse_listener(key: str, value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``, empty host = every interface) -> (host, port);
    ValueError naming ``key`` and ``value`` otherwise."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"Invalid value {value!r} for configuration {key}: "
                         f"must be HOST:PORT with a port 0-65535")
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if any(c.isspace() for c in host) or "/" in host:
        raise ValueError(f"Invalid value {value!r} for configuration {key}: bad host")
    return host, int(port)
