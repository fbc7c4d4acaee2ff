"""The console's HTTP server: ``asyncio.start_server`` and one request per
connection.

Per connection, numbered:
1. read the request head up to the blank line, at most MAX_HEAD_BYTES
   (request.py's bound; more -> 431) within HEAD_TIMEOUT_S (else the
   connection is closed without an answer: a slow or idle client);
2. parse it (request.py; an HttpError -> its status, as a small page);
3. answer it (routes.dispatch) within PAGE_TIMEOUT_S (else 504);
4. write the response with Content-Length and ``Connection: close``, and close.
   HEAD gets the headers only.

One request per connection keeps the server simple and safe: no body is ever
read, so nothing left in the socket can be taken for a next request (HTTP/1.1
allows a server to close after any response). At most MAX_CONNECTIONS are
served at once; others wait in the accept queue. Responses carry a
Content-Security-Policy that forbids scripts and every external resource
(pages are self-contained, inline CSS only) and ``X-Content-Type-Options:
nosniff``, so even a value that escaped escaping could not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import IO

from tools.console.data import ClusterReader
from tools.console.html import esc, page
from tools.console.routes import HTML, Response, dispatch
from protocol import http_head
from protocol.http_head import MAX_HEAD_BYTES, HttpError, parse_head

HEAD_TIMEOUT_S = 10.0
PAGE_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 64
CSP = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
CONSOLE_HEADERS = {"Cache-Control": "no-store", "Content-Security-Policy": CSP,
                   "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def encode_response(status: int, content_type: str, body: str, *, head_only: bool = False) -> bytes:
    """The bytes of a whole HTTP/1.1 response (closing the connection), with the
    console's headers: no caching, no scripts or outside resources (CSP)."""
    return http_head.encode_response(status, body.encode("utf-8"), content_type,
                                     head_only=head_only, headers=CONSOLE_HEADERS)


def http_error_response(e: HttpError) -> Response:
    return e.status, HTML, page(f"{e.status} {e.reason}",
                                esc(f"The console refused the request: {e.reason}."))


class ConsoleServer:
    """Serves the console for one ClusterReader; ``start`` then ``serve_until``."""

    def __init__(self, reader: ClusterReader, *, log: IO[str] | None = None) -> None:
        self.reader = reader
        self.log = log
        self.server: asyncio.Server | None = None
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; -> the address actually bound (port 0 picks a free one)."""
        self.server = await asyncio.start_server(self._client, host, port,
                                                 limit=MAX_HEAD_BYTES + 1)
        sock = self.server.sockets[0].getsockname()
        return str(sock[0]), int(sock[1])

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with self._slots:
            try:
                await self._one_request(reader, writer)
            except (ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def _one_request(self, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            await self._send(writer, http_error_response(HttpError(431, "request head too large")))
            return
        except asyncio.IncompleteReadError as e:
            if e.partial.strip():
                await self._send(writer, http_error_response(HttpError(400, "incomplete request")))
            return
        except ValueError:          # the StreamReader's own limit message
            await self._send(writer, http_error_response(HttpError(431, "request head too large")))
            return
        try:
            request = parse_head(head)
        except HttpError as e:
            await self._send(writer, http_error_response(e))
            return
        try:
            response = await asyncio.wait_for(dispatch(self.reader, request), PAGE_TIMEOUT_S)
        except asyncio.TimeoutError:
            response = http_error_response(HttpError(504, "the cluster did not answer in time"))
        await self._send(writer, response, head_only=request.method == "HEAD",
                         what=f"{request.method} {request.path}")

    async def _send(self, writer: asyncio.StreamWriter, response: Response, *,
                    head_only: bool = False, what: str = "-") -> None:
        status, content_type, body = response
        writer.write(encode_response(status, content_type, body, head_only=head_only))
        await writer.drain()
        if self.log is not None:
            self.log.write(f"{status} {what}\n")
            self.log.flush()


async def serve(reader: ClusterReader, host: str, port: int, *, ready: IO[str] = sys.stdout,
                log: IO[str] | None = None, stop: asyncio.Event | None = None) -> None:
    """Run the console until ``stop`` is set (forever without one)."""
    server = ConsoleServer(reader, log=log)
    bound_host, bound_port = await server.start(host, port)
    ready.write(f"pybroker console listening on http://{bound_host}:{bound_port}/\n")
    ready.flush()
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await server.close()


__all__ = ["ConsoleServer", "encode_response", "serve"]
