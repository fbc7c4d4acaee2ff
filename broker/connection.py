"""One client connection: frames in, handler calls, responses out in order.

Theory of operation:

1. Bytes read from the socket go through ``FrameBuffer``; a frame larger than
   ``socket.request.max.bytes`` (or with a negative size) closes the
   connection with a log line — nothing of it is buffered.
2. Requests are handled one at a time, in arrival order, as Kafka's
   processors do (a connection is "muted" while its request is in flight).
   Clients may pipeline freely; the frames wait in the buffer. This keeps
   responses in request order and appends from one connection in order.
3. The header is decoded first (bytes left after a request body are ignored,
   as Kafka does), so even a request we cannot parse has a
   correlation id: an ApiVersions request of a version above ours gets
   UNSUPPORTED_VERSION in a v0 body (clients retry lower); any other
   unparseable request (unknown key, unsupported version, malformed body)
   closes the connection, as Kafka does.
4. Produce with acks=0 gets no response (the handler returns None).
5. A connection idle for ``connections.max.idle.ms`` (nothing read, no request
   in flight) is closed. One timer per connection checks it, re-armed for the
   rest of the period when there was activity; a per-read timeout cost a timer
   reschedule and two context-manager calls on every read.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Any

from broker.context import RequestContext
from broker.dispatch import dispatch, supported
from protocol.codec import decode_from
from protocol.framing import FrameBuffer, FrameTooLarge, InvalidFrameSize, size_prefixed
from protocol.headers import API_VERSIONS, decode_request_header, encode_response
from protocol.primitives import DecodeError
from protocol.spec import all_apis

log = logging.getLogger(__name__)
# one line per request received and answered, at DEBUG (Kafka's kafka.request.logger)
request_log = logging.getLogger("pybroker.request")
_ids = itertools.count(1)


class Connection:
    def __init__(self, broker: Any, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.id = next(_ids)
        self.broker = broker
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_software: tuple[str, str] | None = None
        config = broker.config
        self.frames = FrameBuffer(config.socket_request_max_bytes)
        self.idle_timeout = config.connections_max_idle_ms / 1000
        self._last_read = 0.0        # loop time of the last read
        self._in_request = False     # a request is being handled (not idle)
        self._idle_timer: asyncio.TimerHandle | None = None
        self._closed_idle = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._last_read = loop.time()
        self._idle_timer = loop.call_later(self.idle_timeout, self._check_idle)
        try:
            while True:
                data = await self.reader.read(256 * 1024)
                self._last_read = loop.time()
                if not data:
                    if self._closed_idle:
                        log.info("closed idle connection %s after %.0f s", self.peer,
                                 self.idle_timeout)
                    return
                try:
                    frames = self.frames.feed(data)
                except (FrameTooLarge, InvalidFrameSize) as e:
                    log.warning("closing connection %s: %s (socket.request.max.bytes=%d)",
                                self.peer, e, self.frames.max_frame_size)
                    return
                self._in_request = True
                try:
                    for frame in frames:
                        if not await self._handle(frame):
                            return
                finally:
                    self._in_request = False
                    self._last_read = loop.time()
        except (ConnectionError, OSError) as e:
            log.debug("connection %s: %s", self.peer, e)
        finally:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self.writer.close()

    def _check_idle(self) -> None:
        """Close the connection if nothing was read (and no request ran) for
        ``idle_timeout``; otherwise look again when that could first be true.
        Closing the transport ends the pending read with EOF."""
        loop = asyncio.get_running_loop()
        idle_for = loop.time() - self._last_read
        if not self._in_request and idle_for >= self.idle_timeout:
            self._closed_idle = True
            self.writer.close()
            return
        wait = self.idle_timeout if self._in_request else self.idle_timeout - idle_for
        self._idle_timer = loop.call_later(wait, self._check_idle)

    async def _handle(self, frame: bytes) -> bool:
        """Handle one request; False means close the connection."""
        try:
            header, pos = decode_request_header(frame)
        except DecodeError as e:
            log.warning("closing connection %s: bad request header: %s", self.peer, e)
            return False
        if not supported(header.api_key, header.api_version):
            if header.api_key == API_VERSIONS:
                from broker.handlers.api_versions import unsupported_version_body
                await self._send(API_VERSIONS, 0, header.correlation_id,
                                 unsupported_version_body())
                return True
            log.warning("closing connection %s: unsupported api key %d version %d",
                        self.peer, header.api_key, header.api_version)
            return False
        spec = all_apis()[header.api_key].request
        try:
            # Trailing bytes after the body are ignored, as Kafka's request parser
            # does: librdkafka's admin client sends Metadata v12 with three extra
            # bytes (a reserved array-count slot), and Kafka answers it.
            body, _end = decode_from(spec, frame, pos, header.api_version)
        except DecodeError as e:
            log.warning("closing connection %s: malformed %s v%d: %s (frame starts %s)",
                        self.peer, spec.name, header.api_version, e, frame[:64].hex())
            return False
        ctx = RequestContext(header=header, connection=self, broker=self.broker)
        traced = request_log.isEnabledFor(logging.DEBUG)
        if traced:
            started = time.monotonic()
            request_log.debug("%s v%d corr %d from %s (%s): received", spec.name,
                              header.api_version, header.correlation_id, self.peer,
                              header.client_id)
        try:
            response = await dispatch(ctx, header, body)
        except Exception:
            log.exception("error handling %s v%d from %s; closing the connection",
                          spec.name, header.api_version, self.peer)
            return False
        if response is not None:
            await self._send(header.api_key, header.api_version, header.correlation_id, response)
        if traced:
            request_log.debug("%s v%d corr %d from %s: answered in %.1f ms, error %s",
                              spec.name, header.api_version, header.correlation_id, self.peer,
                              (time.monotonic() - started) * 1000,
                              getattr(response, "error_code", "-"))
        return True

    async def _send(self, api_key: int, version: int, correlation_id: int, body: Any) -> None:
        chunks = size_prefixed(encode_response(api_key, version, correlation_id, body))
        # one writelines per response (a single writev on uvloop); a storage file
        # slice is read out only here
        self.writer.writelines([c.tobytes() if hasattr(c, "wire_size") else c for c in chunks])
        await self.writer.drain()
