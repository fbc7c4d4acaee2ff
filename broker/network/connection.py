"""One client connection: frames in, handler calls, responses out in order.

Theory of operation:

1. Bytes read from the socket become frames: on plaintext listeners they are
   received in place (``FrameStream`` / ``FrameReceiver``: at most one copy, the
   frame's bytes; a large frame is received into them), on TLS listeners read from
   the stream and split by ``FrameBuffer``. A frame larger than
   ``socket.request.max.bytes`` (or with a negative size) closes the connection
   with a log line — nothing of it is buffered.
2. Requests are handled in arrival order and answered in that order. As in
   Kafka, the next request is not looked at while one is being handled (the
   connection is "muted"), with one exception: a Produce unmutes the
   connection once its records are appended, so the next request's append does
   not wait for this one's acks=all replication (up to ``MAX_PIPELINED_PRODUCES``
   produces per connection wait at once; a small acks=0 / acks=1 one waits for
   nothing and is handled in line: ``PIPELINE_MIN_BYTES``). Appends from one
   connection stay in order, and every response waits for the responses before it.
3. The header is decoded first (bytes left after a request body are ignored,
   as Kafka does), so even a request we cannot parse has a
   correlation id: an ApiVersions request of a version above ours gets
   UNSUPPORTED_VERSION in a v0 body (clients retry lower); any other
   unparseable request (unknown key, unsupported version, malformed body)
   closes the connection, as Kafka does.
4. A handler returns a response body or an ``Outcome`` (``broker.dispatch``):
   ``NO_RESPONSE`` (Produce with acks=0) writes nothing; ``CLOSE_CONNECTION``
   (an acks=0 Produce that failed somewhere) writes nothing and closes the
   connection once the responses before it are written, as Kafka does so the
   client refreshes its metadata. Handlers never touch the socket.
5. A connection idle for ``connections.max.idle.ms`` (nothing read, no request
   in flight) is closed. One timer per connection checks it, re-armed for the
   rest of the period when there was activity; a per-read timeout cost a timer
   reschedule and two context-manager calls on every read.
6. Security (``broker.security``): the listener's ``ListenerSecurity`` says what
   the connection is. ``principal`` is User:ANONYMOUS on PLAINTEXT, the mapped
   certificate subject on SSL (the server did the TLS handshake already), and,
   on SASL listeners, None until ``sasl`` (a ``SaslAuthenticator``) completes:
   until then only ApiVersions, SaslHandshake and SaslAuthenticate are served,
   anything else closes the connection, and so does not completing within
   ``request.timeout.ms``. After a SaslHandshake v0 the tokens arrive as raw
   frames and are answered raw. With ``connections.max.reauth.ms`` set, a
   request after the session's end (other than a re-authentication) closes the
   connection (KIP-368). A handler sets ``close_after_response`` to close the
   connection once its response is written (failed authentication).
7. Limits shared by the broker's connections (``broker.network.limits``): every
   byte read is charged to the request memory pool and a frame's bytes are
   given back once its request is handled; while the pool is exhausted a
   connection begins no new frame (``queued.max.request.bytes``). A request
   takes a slot of the request queue before its handler runs
   (``queued.max.requests``; ``broker.network.request_memory``).
8. Back-pressure: a response is written, then ``drain`` waits while the
   transport's write buffer is above its high-water mark; the connection reads
   nothing while it waits (it is muted while a request is handled), and every
   response waits for the one before it. A client that sends requests and never
   reads its responses therefore stops being read: what it costs the broker is
   bounded by one read (plaintext: the transport reads only while ``read_frames``
   waits; TLS: the reader's buffer, paused above twice the stream limit, and one
   read of ``READ_SIZE``) and one response above the high-water mark.
9. ``request.timeout.ms`` bounds a frame: one begun (some of it read) and not
   complete that long after, while the connection was reading, closes the
   connection with a log line, so a client trickling a byte a second does not
   hold a connection and a buffer for ever. One timer per connection, armed
   when a frame is left incomplete and re-armed for the rest of the period when
   it fires early; complete frames cost nothing.
10. KIP-219 channel muting: a handler (the quota layer) sets ``ctx.throttle_ms``;
   once that request's response is written the connection handles and reads
   nothing more from this client until ``throttle_ms`` later.
11. Metrics (broker/metrics/request_timing.py), when the broker has them: each
   request's stages (queue, local, remote, response queue, send) are timed and
   recorded per API; the handler runs with a ``RequestClock`` current, to which
   the purgatory adds the request's remote time.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import Any, Protocol

from broker.context import BrokerServices, RequestContext
from broker.network.frame_stream import FrameStream
from broker.network.limits import NetworkLimits
from broker.network.log_throttle import LogThrottle
from broker.network.request_memory import Slot
from broker.security.listeners import PLAINTEXT_LISTENER, ListenerSecurity
from broker.security.principal import ANONYMOUS
from broker.security.sasl_server import AuthenticationFailed, CredentialLookup, SaslAuthenticator
from broker.dispatch import Outcome, dispatch, supported, unsupported_version_body
from coordinator.runtime.purgatory import CURRENT as REQUEST_CLOCK
from broker.metrics.request_timing import RequestMetrics
from coordinator.runtime.purgatory import RequestClock, perf_counter
from protocol.api_keys import ApiKey
from protocol.codec import decode_from
from protocol.framing import (FrameBuffer, FrameReceiver, FrameTooLarge, InvalidFrameSize,
                              size_prefixed)
from protocol.headers import API_VERSIONS, RequestHeader, decode_request_header, encode_response
from protocol.primitives import DecodeError, EncodeError
from protocol.scram import ScramCredential
from protocol.spec import wire_apis

log = logging.getLogger(__name__)
# connections closed for malformed input: at most 20 lines per 10 s (log_throttle.py)
BAD_INPUT_LOG = LogThrottle(log)
# Produce requests of one connection that may wait for replication at once
# (librdkafka and the Java client send up to 5). One more is still appended on
# arrival, but handled muted: the next request is read once it is answered.
MAX_PIPELINED_PRODUCES = 5
# An acks=0 / acks=1 Produce smaller than this is handled in line, as every other
# request: it waits for no replication, and its batches are validated on the loop
# (record_checks.is_heavy: compressed ones go to a worker thread, and only those gain
# from the next request being read meanwhile), so a task of its own, two futures and
# three callbacks would be all it got from pipelining -- ~10 µs of a ~185 µs request
# on the many-connection loads (issue 28).
PIPELINE_MIN_BYTES = 64 * 1024
# one line per request received and answered, at DEBUG (Kafka's kafka.request.logger)
request_log = logging.getLogger("pybroker.request")
# bytes asked of the socket per read (asyncio's own transports read up to 256 KiB)
READ_SIZE = 256 * 1024
_ids = itertools.count(1)
_UNLIMITED = NetworkLimits.unlimited()


class ByteSource(Protocol):
    """Where a TLS connection's bytes come from (``broker.security.tls_stream.TlsStream``;
    an ``asyncio.StreamReader`` in tests): up to ``n`` bytes, b"" at the end."""

    async def read(self, n: int) -> bytes: ...


class Connection:
    def __init__(self, broker: BrokerServices, reader: ByteSource | FrameStream,
                 writer: asyncio.StreamWriter | FrameStream,
                 security: ListenerSecurity = PLAINTEXT_LISTENER,
                 limits: NetworkLimits | None = None) -> None:
        self.id = next(_ids)
        self.broker = broker
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_software: tuple[str, str] | None = None
        config = broker.config
        # plaintext: the protocol receives frames in place; else split from the stream
        self.frame_stream = reader if isinstance(reader, FrameStream) else None
        # TLS: the stream and the splitter (None on plaintext listeners)
        self.stream_reader = None if isinstance(reader, FrameStream) else reader
        self.frame_buffer: FrameBuffer | None = None
        self.frames: FrameBuffer | FrameReceiver
        if self.frame_stream is not None:
            self.frames = self.frame_stream.frames
        else:
            self.frames = self.frame_buffer = FrameBuffer(config.socket_request_max_bytes)
        self.idle_timeout = config.connections_max_idle_ms / 1000
        self._last_read = 0.0        # loop time of the last read
        self._in_request = False     # a request is being handled (not idle)
        self._idle_timer: asyncio.TimerHandle | None = None
        self._closed_idle = False
        self._pipelined: set[asyncio.Task[bool]] = set()   # produces past their append
        self._last_response: asyncio.Future[None] | None = None  # done once written
        self._failed = False
        # -- limits, back-pressure, request timeout, throttling (theory of operation, 7-10)
        self.limits = limits or _UNLIMITED
        # -- metrics (11): None when the broker has none
        metrics = broker.metrics
        self.request_metrics: RequestMetrics | None = (
            metrics.requests if metrics is not None else None)
        self._held = 0                           # bytes charged to the memory pool
        self.request_timeout = config.request_timeout_ms / 1000
        self._partial_since: float | None = None  # loop time an incomplete frame began
        self._partial_timer: asyncio.TimerHandle | None = None
        self._muted_until = 0.0                  # KIP-219: loop time the throttle ends
        # -- security (theory of operation, 6)
        self.listener = security.name
        self.security = security
        self.sasl: SaslAuthenticator | None = None
        self.principal: str | None = ANONYMOUS
        self.session_expires: float | None = None      # loop time; KIP-368
        self.close_after_response = False
        if security.mapper is not None:       # SSL: NoMatchingRule propagates (server logs)
            self.principal = security.mapper.principal(writer.get_extra_info("peercert"))
        if security.sasl is not None:
            self.principal = None
            self.sasl = SaslAuthenticator(security.sasl, _credential_lookup(broker))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._last_read = loop.time()
        self._idle_timer = loop.call_later(self.idle_timeout, self._check_idle)
        auth_timer = None
        if self.sasl is not None:
            auth_timer = loop.call_later(self.broker.config.request_timeout_ms / 1000,
                                         self._check_authenticated)
        limits = self.limits
        pool = limits.memory
        limits.opened(self)
        try:
            while True:
                if pool.available <= 0 and not self.frames.buffered:
                    await pool.wait_available()      # no new frame while memory is short
                if self._muted_until:
                    await self._throttled()
                try:
                    got = await self._read_frames()
                except (FrameTooLarge, InvalidFrameSize) as e:
                    # a TLS record begins 0x16 0x03: read as a size, 0x1603.... (too large)
                    hint = " (a TLS handshake on a PLAINTEXT or SASL_PLAINTEXT listener?)" \
                        if isinstance(e, FrameTooLarge) and e.size >> 16 == 0x1603 \
                        and not self.security.uses_tls else ""
                    BAD_INPUT_LOG.log("closing connection %s on listener %s: %s "
                                      "(socket.request.max.bytes=%d)%s", self.peer,
                                      self.listener, e, self.frames.max_frame_size, hint)
                    return
                self._last_read = now = loop.time()
                if got is None:
                    if self._pipelined:     # answer what was asked before the EOF
                        await asyncio.gather(*self._pipelined, return_exceptions=True)
                    if self._closed_idle:
                        log.info("closed idle connection %s after %.0f s", self.peer,
                                 self.idle_timeout)
                    return
                frames, received = got
                pool.available -= received
                self._held += received
                if self.frames.buffered:        # a frame begun, not complete (9)
                    if frames or self._partial_since is None:
                        self._partial_since = now
                        if self._partial_timer is None:
                            self._partial_timer = loop.call_later(self.request_timeout,
                                                                  self._check_partial)
                elif self._partial_since is not None:
                    self._partial_since = None
                if not frames:
                    continue
                self._in_request = True
                try:
                    for frame in frames:
                        if self._muted_until:
                            await self._throttled()
                        if self.sasl is not None and self.sasl.raw_tokens \
                                and not self.sasl.complete:
                            ok = await self._raw_token(frame)
                        else:
                            ok = await self._handle(frame)
                        size = len(frame) + 4
                        self._held -= size
                        pool.release(size)
                        if not ok:
                            return
                finally:
                    self._in_request = False
                    self._last_read = loop.time()
                    if self._partial_since is not None:   # muted meanwhile: not the
                        self._partial_since = self._last_read   # client's time
        except (ConnectionError, OSError) as e:
            log.debug("connection %s: %s", self.peer, e)
        finally:
            limits.closed(self)
            pool.release(self._held)
            self._held = 0
            if auth_timer is not None:
                auth_timer.cancel()
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            if self._partial_timer is not None:
                self._partial_timer.cancel()
            for task in list(self._pipelined):
                task.cancel()
            self.writer.close()

    async def _read_frames(self) -> tuple[list[bytes], int] | None:
        """The frames the next read completes and the bytes it read; None at the end
        of the stream. Plaintext: received in place (``FrameStream``); otherwise read
        from the stream and split here."""
        if self.frame_stream is not None:
            return await self.frame_stream.read_frames()
        assert self.stream_reader is not None and self.frame_buffer is not None
        data = await self.stream_reader.read(READ_SIZE)
        if not data:
            return None
        frames = self.frame_buffer.feed(data)     # (a refused size: before the bytes count)
        return frames, len(data)

    def _check_idle(self) -> None:
        """Close the connection if nothing was read (and no request ran) for
        ``idle_timeout``; otherwise look again when that could first be true.
        Closing the transport ends the pending read with EOF."""
        loop = asyncio.get_running_loop()
        idle_for = loop.time() - self._last_read
        busy = self._in_request or bool(self._pipelined)
        if not busy and idle_for >= self.idle_timeout:
            self._closed_idle = True
            self.writer.close()
            return
        wait = self.idle_timeout if busy else self.idle_timeout - idle_for
        self._idle_timer = loop.call_later(wait, self._check_idle)

    @property
    def last_active(self) -> float:
        """Loop time of the last read or handled request (least-recently-active close)."""
        return self._last_read

    def close(self) -> None:
        """Close the socket; ``run`` then ends (its read sees the end)."""
        self.writer.close()

    def _check_partial(self) -> None:
        """request.timeout.ms: close the connection if the frame it is reading
        began that long ago; otherwise look again when it could be true."""
        self._partial_timer = None
        since = self._partial_since
        if since is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._in_request or self._muted_until:   # not reading: not the client's time
            left = self.request_timeout
        else:
            left = since + self.request_timeout - now
        if left > 0:
            self._partial_timer = loop.call_later(left, self._check_partial)
            return
        log.info("closing connection %s on listener %s: a request begun %.1f s ago is "
                 "still incomplete (%d bytes of it arrived; request.timeout.ms=%d)",
                 self.peer, self.listener, now - since, self.frames.buffered,
                 self.broker.config.request_timeout_ms)
        self.writer.close()

    async def _throttled(self) -> None:
        """KIP-219: read and handle nothing until the throttle time has passed."""
        delay = self._muted_until - asyncio.get_running_loop().time()
        if delay > 0:
            await asyncio.sleep(delay)
        self._muted_until = 0.0
        if self._partial_since is not None:
            self._partial_since = asyncio.get_running_loop().time()

    def _mute_for(self, throttle_ms: int) -> None:
        until = asyncio.get_running_loop().time() + throttle_ms / 1000
        if until > self._muted_until:
            self._muted_until = until

    def _check_authenticated(self) -> None:
        """A SASL connection not authenticated within request.timeout.ms is closed."""
        if self.sasl is not None and not self.sasl.complete:
            log.info("closing connection %s on listener %s: SASL authentication not "
                     "completed within %d ms", self.peer, self.listener,
                     self.broker.config.request_timeout_ms)
            self.writer.close()

    async def _raw_token(self, frame: bytes) -> bool:
        """A SASL token sent raw (after SaslHandshake v0); answered raw."""
        assert self.sasl is not None
        try:
            reply = await self.sasl.authenticate(frame)
        except AuthenticationFailed as e:
            self.authentication_failed(e.detail)
            await asyncio.sleep(self.sasl.settings.failed_delay_ms / 1000)
            return False
        await _after(self._last_response)
        self.writer.writelines(size_prefixed([reply]))
        await self.writer.drain()
        self.authenticated()
        return True

    def authentication_failed(self, message: str) -> None:
        """Log one line per failed authentication (as Kafka's Selector does)."""
        log.info("Failed authentication with /%s (listener=%s) (%s)",
                 self.peer.rsplit(":", 1)[0], self.listener, message)

    def authenticated(self) -> None:
        """SASL completed: take the principal and start the session clock."""
        assert self.sasl is not None
        if self.sasl.complete:
            self.principal = self.sasl.principal
            reauth = self.sasl.settings.reauth_ms
            self.session_expires = (asyncio.get_running_loop().time() + reauth / 1000
                                    if reauth > 0 else None)

    def _refused(self, header: RequestHeader) -> bool:
        """Whether security forbids serving this request (the connection then closes)."""
        if self.sasl is None:
            return False
        if not self.sasl.allows(header.api_key):
            log.warning("closing connection %s on listener %s: unexpected %s request "
                        "during SASL authentication", self.peer, self.listener,
                        _api_name(header.api_key))
            return True
        if (self.session_expires is not None and header.api_key != ApiKey.SASL_HANDSHAKE
                and not self.sasl.reauthenticating
                and asyncio.get_running_loop().time() > self.session_expires):
            log.info("closing connection %s on listener %s: SASL session expired "
                     "(connections.max.reauth.ms) without re-authentication", self.peer,
                     self.listener)
            return True
        return False

    async def _handle(self, frame: bytes) -> bool:
        """Handle one request; False means close the connection."""
        received = perf_counter() if self.request_metrics is not None else 0.0
        try:
            header, pos = decode_request_header(frame)
        except DecodeError as e:
            BAD_INPUT_LOG.log("closing connection %s: bad request header: %s", self.peer, e)
            return False
        if not supported(header.api_key, header.api_version):
            if header.api_key == API_VERSIONS:
                await _after(self._last_response)
                await self._send(API_VERSIONS, 0, header.correlation_id,
                                 unsupported_version_body())
                return True
            BAD_INPUT_LOG.log("closing connection %s: unsupported api key %d version %d",
                              self.peer, header.api_key, header.api_version)
            return False
        if self._refused(header):
            return False
        spec = wire_apis()[header.api_key].request
        try:
            # Trailing bytes after the body are ignored, as Kafka's request parser
            # does: librdkafka's admin client sends Metadata v12 with three extra
            # bytes (a reserved array-count slot), and Kafka answers it.
            body, _end = decode_from(spec, frame, pos, header.api_version)
        except DecodeError as e:
            BAD_INPUT_LOG.log("closing connection %s: malformed %s v%d: %s (frame starts %s)",
                              self.peer, spec.name, header.api_version, e, frame[:64].hex())
            return False
        ctx = RequestContext(header=header, connection=self, broker=self.broker)
        queue = self.limits.queue
        # queued.max.requests: a slot, waiting for one if none is free
        slot = queue.try_enter() or await queue.enter()
        times = (received, perf_counter()) if received else None    # metrics (11)
        if header.api_key == ApiKey.PRODUCE and len(self._pipelined) < MAX_PIPELINED_PRODUCES \
                and (body.acks == -1 or len(frame) >= PIPELINE_MIN_BYTES):
            return await self._pipeline_produce(ctx, header, body, spec.name, slot, times)
        return await self._answer(ctx, header, body, spec.name, self._last_response, None,
                                  slot, times)

    async def _pipeline_produce(self, ctx: RequestContext, header: RequestHeader, body: Any,
                                name: str, slot: Slot,
                                times: tuple[float, float] | None = None) -> bool:
        """Run a Produce in a task of its own and come back once its records are
        appended (or it ended): the caller may read the next request while this
        one waits for replication. Its response still goes after the one before."""
        loop = asyncio.get_running_loop()
        appended: asyncio.Future[None] = loop.create_future()
        queue = self.limits.queue

        def unmute(*_: Any) -> None:
            if not appended.done():
                appended.set_result(None)
                queue.leave(slot)          # appended: out of the request queue
        ctx.appended = unmute
        written: asyncio.Future[None] = loop.create_future()
        previous, self._last_response = self._last_response, written
        task = loop.create_task(self._answer(ctx, header, body, name, previous, written,
                                             times=times))
        self._pipelined.add(task)
        task.add_done_callback(self._pipelined.discard)
        task.add_done_callback(unmute)
        await appended
        return not self._failed

    async def _answer(self, ctx: RequestContext, header: RequestHeader, body: Any, name: str,
                      previous: asyncio.Future[None] | None,
                      written: asyncio.Future[None] | None, slot: Slot | None = None,
                      times: tuple[float, float] | None = None) -> bool:
        """Handle, wait for the response before this one, write ours; False (and the
        connection closed) when the handler failed or asked for the close.
        ``slot``: the request-queue slot to give back when the handler returns.
        ``times``: (received, dequeued) when the request is timed (metrics, 11)."""
        clock = clock_token = None
        if times is not None:
            clock = RequestClock()
            clock_token = REQUEST_CLOCK.set(clock)
        traced = request_log.isEnabledFor(logging.DEBUG)
        if traced:
            started = time.monotonic()
            request_log.debug("%s v%d corr %d from %s (%s): received", name,
                              header.api_version, header.correlation_id, self.peer,
                              header.client_id)
        try:
            try:
                response = await dispatch(ctx, header, body)
            except Exception:
                log.exception("error handling %s v%d from %s; closing the connection",
                              name, header.api_version, self.peer)
                self._failed = True
                self.writer.close()
                return False
            finally:
                if slot is not None:
                    self.limits.queue.leave(slot)
                if clock_token is not None:
                    REQUEST_CLOCK.reset(clock_token)
                    handled = perf_counter()
            await _after(previous)
            if clock is not None:
                queued_done = perf_counter()
            if response is Outcome.CLOSE_CONNECTION:
                # the handler logged why; responses before this one are written
                self._failed = True
                self.writer.close()
                return False
            if not isinstance(response, Outcome) and not self._failed:
                try:
                    await self._send(header.api_key, header.api_version, header.correlation_id,
                                     response)
                except (ConnectionError, OSError) as e:   # in a task: nobody else would see it
                    log.debug("connection %s: %s", self.peer, e)
                    self._failed = True
                    self.writer.close()
                    return False
                except EncodeError as e:    # e.g. a message quoting a hostile name too long
                    log.warning("closing connection %s: the %s v%d response cannot be "
                                "encoded: %s", self.peer, name, header.api_version, e)
                    self._failed = True
                    self.writer.close()
                    return False
            if clock is not None and times is not None and self.request_metrics is not None:
                self.request_metrics.record(
                    header.api_key, header.api_version,
                    _fetch_from(header.api_key, header.api_version, body),
                    times[0], times[1], handled, clock.remote, queued_done, perf_counter())
            if ctx.throttle_ms > 0:
                self._mute_for(ctx.throttle_ms)
            if self.close_after_response:
                self._failed = True
                self.writer.close()
                return False
        finally:
            if written is not None and not written.done():
                written.set_result(None)
        if traced:
            request_log.debug("%s v%d corr %d from %s: answered in %.1f ms, error %s",
                              name, header.api_version, header.correlation_id, self.peer,
                              (time.monotonic() - started) * 1000,
                              getattr(response, "error_code", "-"))
        return True

    async def _send(self, api_key: int, version: int, correlation_id: int, body: Any) -> None:
        chunks = size_prefixed(encode_response(api_key, version, correlation_id, body))
        if self.frame_stream is not None:      # plaintext: large file slices zero-copy
            await self.frame_stream.write_response(chunks)
        else:
            # one writelines per response (a single writev on uvloop); a storage file
            # slice is read out only here
            self.writer.writelines([c.tobytes() if hasattr(c, "wire_size") else c
                                    for c in chunks])
        await self.writer.drain()


async def _after(earlier: asyncio.Future[None] | None) -> None:
    """Wait until the response before this one is written (responses go in order)."""
    if earlier is not None and not earlier.done():
        await earlier


def _fetch_from(api_key: int, version: int, body: Any) -> str | None:
    """For a Fetch, whom from (Kafka's FetchConsumer / FetchFollower metrics)."""
    if api_key != ApiKey.FETCH:
        return None
    replica_id = body.replica_state.replica_id if version >= 15 else body.replica_id
    return "Follower" if replica_id >= 0 else "Consumer"


def _api_name(api_key: int) -> str:
    apis = wire_apis()
    return apis[api_key].request.name if api_key in apis else f"api key {api_key}"


def _credential_lookup(broker: BrokerServices) -> CredentialLookup:
    """(user, mechanism) -> the stored SCRAM credential (None: unknown user)."""
    async def lookup(user: str, mechanism: str) -> ScramCredential | None:
        return await broker.scram_credentials.get(user, mechanism)
    return lookup
