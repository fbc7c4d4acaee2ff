"""One asyncio connection to one broker: handshake, versions, pipelined requests.

Everything of ours that talks to a broker goes through it: the tools, the Spark
layer, the benchmarks, and the broker's own outgoing paths (follower fetches,
AlterPartition, the controller's LeaderAndIsr / UpdateMetadata / StopReplica
through ``client.pool.BrokerPool``). Built only on ``protocol/``: request headers and
bodies are encoded with ``protocol.headers`` / ``protocol.codec``, responses are
split with ``protocol.framing.FrameBuffer`` and decoded with
``protocol.headers.decode_response``.

Theory of operation:

1. ``KafkaConnection.open`` connects: over TLS when the ``ClientSecurity`` says
   SSL or SASL_SSL (``client.security``: its context decides what is trusted and
   whether the certificate must name ``host``, which is sent as SNI; a refused
   certificate or failed TLS handshake is ``AuthenticationFailed``). It then
   performs the ApiVersions handshake at our highest ApiVersions version. A
   broker that does not know that version answers UNSUPPORTED_VERSION in a
   v0-layout body naming the ApiVersions range it does support (KIP-511); we
   then retry once at the highest version we share. The broker's ranges are
   kept in ``api_versions``. With SASL_PLAINTEXT or SASL_SSL, SaslHandshake and
   the SaslAuthenticate rounds follow (``client.sasl_client``) before ``open``
   returns; the broker's session lifetime (KIP-368) is kept in
   ``session_lifetime_ms``. Before 85 % of that lifetime has passed, the next
   request re-authenticates first (KIP-368): new requests wait at a gate, the
   ones in flight are answered, SaslHandshake + SaslAuthenticate run again on
   the same connection, then the gate opens (the broker serves nothing else
   during a re-authentication and closes a connection whose session ended).
2. ``request`` picks the highest version both sides speak (or the one given),
   assigns the next correlation id and writes the whole frame synchronously
   (so concurrent callers never interleave bytes), then awaits the future
   registered under that correlation id. Record payloads are written as their
   own chunks, never copied into the frame.
3. One reader task splits incoming bytes into frames and resolves the future
   whose correlation id the frame carries. Any number of requests may be in
   flight (pipelining); Kafka answers in order, but we match by id.
4. A request that times out raises ``RequestTimedOut``; its id is remembered so
   a late answer is dropped instead of being taken for a protocol error. The
   connection stays usable.
5. When the connection drops (EOF, socket error, undecodable or unexpected
   frame), every pending request fails with ``KafkaConnectionError`` and the
   connection is closed for good; open a new one (``BrokerPool`` does).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import struct
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from client.errors import (AuthenticationFailed, KafkaConnectionError, NoCommonVersion,
                           RequestTimedOut)
from client.sasl_client import authenticate
from client.security import PLAINTEXT, ClientSecurity
from protocol import codec
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.framing import FrameBuffer, size_prefixed
from protocol.headers import RequestHeader, decode_response, encode_request_header
from protocol.primitives import DecodeError
from protocol.schema import Struct
from protocol.spec import all_apis, api

_SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

__all__ = [
    "KafkaConnection", "DEFAULT_CLIENT_ID", "DEFAULT_TIMEOUT", "our_versions", "common_version",
]

DEFAULT_CLIENT_ID = "pybroker-client"
DEFAULT_TIMEOUT = 30.0
SOFTWARE_NAME = "pybroker"
SOFTWARE_VERSION = "0.1.0"
_INT16 = struct.Struct(">h")
_READ_CHUNK = 256 * 1024


@functools.cache
def our_versions() -> Mapping[int, tuple[int, int]]:
    """api key -> (min, max) version this client can encode (our schemas); built
    once, read-only (it is asked on every request)."""
    return MappingProxyType({k: (a.request.valid.lo, a.request.valid.hi)
                             for k, a in all_apis().items()})


def common_version(ours: tuple[int, int], theirs: tuple[int, int]) -> int | None:
    """Highest version in both ranges, or None when they do not overlap."""
    hi = min(ours[1], theirs[1])
    return hi if hi >= max(ours[0], theirs[0]) else None


class KafkaConnection:
    """An open connection to one broker; see the module docstring."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 host: str, port: int, client_id: str | None, timeout: float,
                 max_frame_size: int) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self.api_versions: dict[int, tuple[int, int]] = {}  # the broker's ranges
        self.security: ClientSecurity = PLAINTEXT
        self.session_lifetime_ms = 0   # SASL (KIP-368): 0 = no limit, or not SASL
        self.authenticated_at: float | None = None   # loop time SASL completed
        self._reauth_lock = asyncio.Lock()             # one re-authentication at a time
        self._open_gate = asyncio.Event()              # cleared while re-authenticating
        self._open_gate.set()
        self._reader = reader
        self._writer = writer
        self._frames = FrameBuffer(max_frame_size)
        self._next_id = 0
        # correlation id -> (future, api key, version)
        self._pending: dict[int, tuple[asyncio.Future[Struct], int, int]] = {}
        self._abandoned: set[int] = set()   # timed out; a late answer is dropped
        self._closed: KafkaConnectionError | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    # -- opening -------------------------------------------------------------------

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str | None = DEFAULT_CLIENT_ID,
                   timeout: float = DEFAULT_TIMEOUT, handshake: bool = True,
                   max_frame_size: int = 100 * 1024 * 1024,
                   security: ClientSecurity | None = None) -> KafkaConnection:
        """Connect (over TLS if ``security`` says so), negotiate versions (unless
        ``handshake`` is False) and authenticate (SASL). ``security`` None is
        PLAINTEXT.

        Raises KafkaConnectionError when the broker cannot be reached within
        ``timeout`` seconds or the handshake fails; AuthenticationFailed (one of
        those) when TLS or SASL refuses us."""
        sec = security or PLAINTEXT
        if sec.uses_sasl and not handshake:
            raise ValueError(f"{sec.protocol} needs the ApiVersions handshake")
        reader, writer = await _connect(host, port, sec, timeout)
        conn = cls(reader, writer, host=host, port=port, client_id=client_id, timeout=timeout,
                   max_frame_size=max_frame_size)
        conn.security = sec
        if handshake:
            try:
                await conn.handshake()
                if sec.uses_sasl:
                    assert sec.sasl_username is not None and sec.sasl_password is not None
                    conn.session_lifetime_ms = await authenticate(
                        conn, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password)
                    conn.authenticated_at = asyncio.get_running_loop().time()
            except KafkaConnectionError as e:
                await conn.close()
                if type(e) is KafkaConnectionError and _during(sec):
                    raise KafkaConnectionError(f"{e}{_during(sec)}", host, port) from e
                raise
            except BaseException:
                await conn.close()
                raise
        return conn

    async def handshake(self) -> dict[int, tuple[int, int]]:
        """ApiVersions at our highest version, retried once at the version the
        broker names when it answers UNSUPPORTED_VERSION; fills ``api_versions``."""
        ours = our_versions()[ApiKey.API_VERSIONS]
        version = ours[1]
        for _attempt in range(2):
            resp = await self._api_versions(version)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                theirs = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
                retry = common_version(ours, theirs.get(ApiKey.API_VERSIONS, (0, 0)))
                if retry is None or retry == version:
                    break
                version = retry
                continue
            if resp.error_code != ErrorCode.NONE:
                err = ErrorCode.from_code(resp.error_code)
                raise KafkaConnectionError(f"ApiVersions to {self.host}:{self.port} failed: "
                                           f"{err.name}", self.host, self.port)
            self.api_versions = {k.api_key: (k.min_version, k.max_version)
                                 for k in resp.api_keys}
            return self.api_versions
        raise NoCommonVersion(f"{self.host}:{self.port} shares no ApiVersions version with us",
                              self.host, self.port, api_key=ApiKey.API_VERSIONS)

    async def _api_versions(self, version: int) -> Struct:
        body = api(ApiKey.API_VERSIONS).request.new(client_software_name=SOFTWARE_NAME,
                                                    client_software_version=SOFTWARE_VERSION)
        resp = await self.request(ApiKey.API_VERSIONS, body, version=version)
        assert resp is not None
        return resp

    # -- versions --------------------------------------------------------------------

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        """Highest version of ``api_key`` we and the broker both speak (capped
        at ``max_version``); NoCommonVersion when there is none."""
        ours = our_versions().get(api_key)
        theirs = self.api_versions.get(api_key)
        if ours is None or theirs is None:
            raise NoCommonVersion(f"{self.host}:{self.port} does not support api key "
                                  f"{api_key}", self.host, self.port, api_key=api_key)
        if max_version is not None:
            ours = (ours[0], min(ours[1], max_version))
        v = common_version(ours, theirs)
        if v is None:
            raise NoCommonVersion(f"api key {api_key}: broker {self.host}:{self.port} speaks "
                                  f"{theirs[0]}-{theirs[1]}, we speak {ours[0]}-{ours[1]}",
                                  self.host, self.port, api_key=api_key)
        return v

    def supports(self, api_key: int, version: int | None = None) -> bool:
        theirs = self.api_versions.get(api_key)
        if theirs is None:
            return False
        return version is None or theirs[0] <= version <= theirs[1]

    # -- requests --------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def request(self, api_key: int, body: Struct, version: int | None = None, *,
                      expect_response: bool = True, timeout: float | None = None
                      ) -> Struct | None:
        """Send one request and return the decoded response body.

        ``version`` None means the highest common version (after the handshake;
        before it, ApiVersions v0). ``expect_response=False`` is for Produce
        with acks=0: the frame is written and flushed and None is returned.
        ``timeout`` (seconds) defaults to the connection's."""
        if api_key not in _SASL_APIS:
            if self._reauth_due():
                await self._reauthenticate()
            elif not self._open_gate.is_set():
                await self._open_gate.wait()
        if version is None:
            version = self.version_for(api_key) if self.api_versions else 0
        fut = self._send(api_key, version, body, expect_response)
        await self._drain(fut, self.timeout if timeout is None else timeout)
        if fut is None:
            return None
        return await self._wait(fut, timeout)

    def _reauth_due(self) -> bool:
        """KIP-368: re-authenticate once 85 % of the session lifetime has passed."""
        if not self.session_lifetime_ms or self.authenticated_at is None:
            return False
        elapsed = asyncio.get_running_loop().time() - self.authenticated_at
        return elapsed >= 0.85 * self.session_lifetime_ms / 1000

    async def _reauthenticate(self) -> None:
        """Hold new requests, let those in flight finish, authenticate again."""
        async with self._reauth_lock:
            if not self._reauth_due():            # another caller just did it
                return
            self._open_gate.clear()
            try:
                in_flight = [f for f, _, _ in self._pending.values()]
                if in_flight:
                    await asyncio.wait(in_flight, timeout=self.timeout)
                sec = self.security
                assert sec.sasl_username is not None and sec.sasl_password is not None
                self.session_lifetime_ms = await authenticate(
                    self, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password)
                self.authenticated_at = asyncio.get_running_loop().time()
            finally:
                self._open_gate.set()

    async def request_with_header(self, header: RequestHeader, body: Struct, *,
                                  expect_response: bool = True,
                                  timeout: float | None = None) -> Struct | None:
        """As ``request``, taking api key and version from a header built by the
        caller (the controller's ``BrokerTransport.send``). The correlation id is
        always this connection's own; ``header.correlation_id`` is ignored."""
        return await self.request(header.api_key, body, header.api_version,
                                  expect_response=expect_response, timeout=timeout)

    def _send(self, api_key: int, version: int, body: Struct,
              expect_response: bool) -> asyncio.Future[Struct] | None:
        """Encode and write one frame without yielding (so frames never interleave)."""
        if self._closed is not None:
            raise KafkaConnectionError(str(self._closed), self.host, self.port)
        correlation_id = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        header = RequestHeader(api_key, version, correlation_id, self.client_id)
        chunks = [encode_request_header(header), *codec.encode_chunks(body, version)]
        fut: asyncio.Future[Struct] | None = None
        if expect_response:
            fut = asyncio.get_running_loop().create_future()
            self._pending[correlation_id] = (fut, api_key, version)
        # One writelines per frame: on uvloop (the broker's loop) that is one
        # writev of the chunks as they are. One write() per chunk cost a send(2)
        # each, so a follower's Fetch went out as three TCP segments and could
        # wake the leader three times. (The stdlib loop joins the chunks first.)
        self._writer.writelines(size_prefixed(chunks))
        return fut

    async def _drain(self, fut: asyncio.Future[Struct] | None, limit: float) -> None:
        """Wait until the transport took the frame. A broker that stops reading
        for ``limit`` seconds leaves a frame half sent, which cannot be taken
        back: the connection is failed then, as on a socket error."""
        if self._writer.transport.get_write_buffer_size() == 0 and self._closed is None:
            return   # all handed to the kernel: nothing to wait for (the common case)
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancel
            # that races with the inner await completing (the caller's task then lives on)
            async with asyncio.timeout(limit):
                await self._writer.drain()
            return
        except TimeoutError:
            error: KafkaConnectionError = RequestTimedOut(
                f"{self.host}:{self.port} did not take a request within {limit:g} s",
                self.host, self.port)
        except (OSError, RuntimeError) as e:
            error = KafkaConnectionError(f"connection to {self.host}:{self.port} lost while "
                                         f"sending: {e}", self.host, self.port)
        self._fail(error, abort=True)
        if fut is not None and fut.done() and not fut.cancelled():
            fut.exception()  # mark retrieved: the caller gets ``error`` instead
        raise error

    async def _wait(self, fut: asyncio.Future[Struct], timeout: float | None) -> Struct:
        """The response, or RequestTimedOut after ``timeout`` (the connection's by
        default): the request is abandoned then, and its answer, should it come, is
        dropped by correlation id. A caller cancelled meanwhile cancels ``fut``;
        the entry stays pending, so the response still pairs (and is dropped).

        A timer on the future, not ``asyncio.timeout`` around ``shield(fut)``: those
        cost a Timeout, a second future and their callbacks on every request, and
        a follower sends one request per replication round."""
        limit = self.timeout if timeout is None else timeout
        timer = asyncio.get_running_loop().call_later(limit, self._time_out, fut, limit)
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                fut.exception()      # it ended as we were cancelled: mark it retrieved
            raise
        finally:
            timer.cancel()

    def _time_out(self, fut: asyncio.Future[Struct], limit: float) -> None:
        if fut.done():
            return
        for cid, (f, key, version) in list(self._pending.items()):
            if f is fut:
                del self._pending[cid]
                self._abandoned.add(cid)
                fut.set_exception(RequestTimedOut(
                    f"no response from {self.host}:{self.port} to {api(key).name} "
                    f"v{version} (correlation id {cid}) within {limit:g} s",
                    self.host, self.port))
                return

    # -- reading ---------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    raise KafkaConnectionError(f"connection to {self.host}:{self.port} closed "
                                               "by the broker", self.host, self.port)
                for frame in self._frames.feed(data):
                    self._dispatch(frame)
        except KafkaConnectionError as e:
            self._fail(e)
        except ssl.SSLError as e:  # e.g. TLS 1.3: our certificate refused after the handshake
            self._fail(AuthenticationFailed(f"TLS with {self.host}:{self.port} failed: "
                                            f"{e.reason or e}", self.host, self.port))
        except (OSError, ValueError) as e:  # ValueError: framing / decoding
            self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} failed: {e}",
                                            self.host, self.port))
        except asyncio.CancelledError:
            self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} closed",
                                            self.host, self.port))

    def _dispatch(self, frame: bytes) -> None:
        if len(frame) < 4:
            raise DecodeError(f"response frame of {len(frame)} bytes")
        (cid,) = struct.unpack_from(">i", frame, 0)
        entry = self._pending.pop(cid, None)
        if entry is None:
            if cid in self._abandoned:
                self._abandoned.discard(cid)
                return
            raise DecodeError(f"response with unexpected correlation id {cid}")
        fut, api_key, version = entry
        try:
            body = self._decode(api_key, version, frame)
        except DecodeError as e:
            if not fut.done():
                fut.set_exception(KafkaConnectionError(
                    f"undecodable {api(api_key).name} v{version} response from "
                    f"{self.host}:{self.port}: {e}", self.host, self.port))
            raise
        if not fut.done():
            fut.set_result(body)

    @staticmethod
    def _decode(api_key: int, version: int, frame: bytes) -> Struct:
        # KIP-511: an ApiVersions request at a version the broker does not know
        # is answered with UNSUPPORTED_VERSION in a v0 body, whatever we asked
        # for. The ApiVersions response header is always v0 (4 bytes), so the
        # error code is the int16 right after it.
        if (api_key == ApiKey.API_VERSIONS and version > 0 and len(frame) >= 6
                and _INT16.unpack_from(frame, 4)[0] == ErrorCode.UNSUPPORTED_VERSION):
            version = 0
        return decode_response(api_key, version, frame)[1]

    # -- closing ---------------------------------------------------------------------

    def _fail(self, error: KafkaConnectionError, abort: bool = False) -> None:
        """Fail every pending request and mark the connection closed (idempotent).
        ``abort`` drops unsent bytes; otherwise what is queued (acks=0 produce)
        is still flushed before the socket closes."""
        if self._closed is None:
            self._closed = error
        pending, self._pending = self._pending, {}
        for fut, _key, _version in pending.values():
            if not fut.done():
                fut.set_exception(error)
        if abort:
            self._writer.transport.abort()
        elif not self._writer.is_closing():
            self._writer.close()

    async def close(self) -> None:
        """Close the socket; pending requests fail with KafkaConnectionError."""
        self._fail(KafkaConnectionError(f"connection to {self.host}:{self.port} closed",
                                        self.host, self.port))
        if self._read_task is not asyncio.current_task() and not self._read_task.done():
            self._read_task.cancel()
            # asyncio.wait, not ``await task`` in a try/except CancelledError: that
            # would also swallow a cancel aimed at whoever is closing us
            await asyncio.wait({self._read_task})
        try:  # unsent bytes are flushed first, within the connection's timeout
            async with asyncio.timeout(self.timeout):
                await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()
        except (OSError, RuntimeError):
            pass

    async def __aenter__(self) -> KafkaConnection:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.in_flight} in flight"
        return f"<KafkaConnection {self.host}:{self.port} {state}>"


async def _connect(host: str, port: int, sec: ClientSecurity,
                   timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The socket, with the TLS handshake done when ``sec`` asks for TLS."""
    context = sec.ssl_context if sec.uses_tls else None
    try:
        async with asyncio.timeout(timeout):   # not wait_for: see _send
            # server_hostname: SNI, and the name checked when the context checks host
            # names (asyncio would default it to ``host`` anyway)
            return await asyncio.open_connection(host, port, ssl=context,
                                                 server_hostname=host if context else None)
    except ssl.SSLCertVerificationError as e:
        raise AuthenticationFailed(f"TLS handshake with {host}:{port} failed: the broker's "
                                   f"certificate was refused: {e.verify_message or e}",
                                   host, port) from e
    except ssl.SSLError as e:
        raise AuthenticationFailed(f"TLS handshake with {host}:{port} failed: {e.reason or e} "
                                   f"(does the listener speak {sec.protocol}?)", host,
                                   port) from e
    except (OSError, TimeoutError) as e:
        raise KafkaConnectionError(f"cannot connect to {host}:{port}: "
                                   f"{str(e) or type(e).__name__}{_during(sec)}", host,
                                   port) from e


def _during(sec: ClientSecurity) -> str:
    """A hint for a connection lost while opening: a listener of another protocol
    (or refusing our certificate) closes the connection without a word."""
    return "" if sec.protocol == "PLAINTEXT" else f" (opening a {sec.protocol} connection)"

