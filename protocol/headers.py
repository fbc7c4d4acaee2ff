"""Request and response headers, and whole-frame encode/decode.

Request header layouts (every frame body after the 4-byte size prefix):

    v0: api_key int16 | api_version int16 | correlation_id int32
    v1: v0 + client_id (classic nullable string: int16 length, -1 = null)
    v2: v1 + tagged-field section (client_id stays a classic string)

Response header layouts:

    v0: correlation_id int32
    v1: v0 + tagged-field section

Which header goes with a message: a flexible request version uses request
header v2, otherwise v1 — except ControlledShutdown v0, which predates the
client id and uses v0. A flexible response uses response header v1, otherwise
v0 — except ApiVersions, whose response header is *always* v0 so a client can
read it before knowing what the broker supports (KIP-511).

What happens to a request the broker does not serve (the broker's transport,
broker/network/connection.py, using ``decode_request_header`` and the handler
registry; checked against a real broker by tests/integration/test_bad_input.py).
It is what Kafka 3.9 does: SocketServer.parseRequestHeader accepts a header only
when ``ApiKeys.isVersionEnabled`` says so, which is true for *any* version of
ApiVersions and for the supported range of every other key; anything else throws
and the processor closes the connection.

* ApiVersions at a version we do not support (above our maximum, or negative):
  answered, never closed. The body is not parsed (Kafka's RequestContext treats
  it as v0); the response is ApiVersions v0 with a v0 response header:
  error_code UNSUPPORTED_VERSION (35) and exactly one api_keys entry, ApiVersions'
  own [min, max] (ApiVersionsRequest.getErrorResponse), so the client retries at
  our maximum. The header of such a request is still decoded by the version's
  flexibility (v3+ carry a v2 header), so the correlation id is the client's.
* Any other unknown api key, a key Kafka defines but this broker does not serve
  (e.g. the KRaft-only Vote, 52), or a version outside a served key's range:
  no response; the connection is closed (other connections are unaffected).
* A served key and version whose body does not decode (truncated, a length or
  count beyond the frame, see codec_reference's decode limits): closed likewise
  (Kafka's RequestContext.parseRequest throws InvalidRequestException). Bytes
  after a complete body are ignored, as Kafka does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from protocol import codec
from protocol.codec_reference import Reader, _read_tagged_section, write_tagged_section
from protocol.primitives import DecodeError, Writer
from protocol.schema import Struct
from protocol.spec import wire_apis

_HEAD = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

API_VERSIONS = 18
CONTROLLED_SHUTDOWN = 7


class UnknownApiKey(DecodeError):
    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown api key {api_key}")
        self.api_key = api_key


class UnsupportedApiVersion(DecodeError):
    def __init__(self, api_key: int, version: int) -> None:
        super().__init__(f"api key {api_key} has no version {version}")
        self.api_key = api_key
        self.version = version


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    unknown_tags: dict[int, bytes] | None = field(default=None)


def request_header_version(api_key: int, version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN and version == 0:
        return 0
    spec = wire_apis().get(api_key)
    if spec is not None and spec.request.is_flexible(version):
        return 2
    return 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    return 1 if wire_apis()[api_key].response.is_flexible(version) else 0


def decode_request_header(frame: Any) -> tuple[RequestHeader, int]:
    """Parse the header only -> (header, offset of the body).

    Works for unknown keys and versions (as header v1), so the caller can still
    answer with the right correlation id: ApiVersions must answer an
    unsupported version with UNSUPPORTED_VERSION rather than close.
    """
    buf = memoryview(frame)
    if len(buf) < _HEAD.size:
        raise DecodeError(f"request header needs 8 bytes, frame has {len(buf)}")
    api_key, version, correlation_id = _HEAD.unpack_from(buf, 0)
    header = RequestHeader(api_key, version, correlation_id)
    hv = request_header_version(api_key, version)
    pos = _HEAD.size
    if hv >= 1:
        if pos + 2 > len(buf):
            raise DecodeError("truncated client id")
        (n,) = _INT16.unpack_from(buf, pos)
        pos += 2
        if n >= 0:
            if pos + n > len(buf):
                raise DecodeError("truncated client id")
            header.client_id = str(buf[pos:pos + n], "utf-8", "replace")
            pos += n
    if hv >= 2:
        holder = _TagHolder()
        r = Reader(buf, pos)
        _read_tagged_section(holder, {}, r, version)
        header.unknown_tags = holder.unknown_tags
        pos = r.pos
    return header, pos


class _TagHolder:
    """Receives a header's (all unknown) tagged fields."""

    unknown_tags: dict[int, bytes] | None = None


def decode_request(frame: Any) -> tuple[RequestHeader, Struct]:
    """Header and body of one request frame (size prefix excluded)."""
    header, pos = decode_request_header(frame)
    spec = wire_apis().get(header.api_key)
    if spec is None:
        raise UnknownApiKey(header.api_key)
    if header.api_version not in spec.request.valid:
        raise UnsupportedApiVersion(header.api_key, header.api_version)
    body, end = codec.decode_from(spec.request, frame, pos, header.api_version)
    if end != len(frame):
        raise DecodeError(f"{spec.request.name} v{header.api_version}: "
                          f"{len(frame) - end} trailing bytes")
    return header, body


def encode_request_header(header: RequestHeader) -> bytearray:
    out = bytearray(_HEAD.pack(header.api_key, header.api_version, header.correlation_id))
    hv = request_header_version(header.api_key, header.api_version)
    if hv >= 1:
        if header.client_id is None:
            out += _INT16.pack(-1)
        else:
            cid = header.client_id.encode("utf-8")
            out += _INT16.pack(len(cid)) + cid
    if hv >= 2:
        w = Writer()
        write_tagged_section([], header.unknown_tags, w, header.api_version)
        out += w.buf
    return out


def encode_request(header: RequestHeader, body: Struct) -> bytes:
    return bytes(encode_request_header(header)) + codec.encode(body, header.api_version)


def encode_response(api_key: int, version: int, correlation_id: int, body: Struct) -> list[Any]:
    """Header + body as chunks (record payloads uncopied), no size prefix."""
    head = bytearray(_INT32.pack(correlation_id))
    if response_header_version(api_key, version) >= 1:
        head.append(0)  # empty tagged-field section
    chunks = codec.encode_chunks(body, version)
    if isinstance(chunks[0], bytearray):  # a single owned buffer: prepend in place
        chunks[0][0:0] = head
        return chunks
    return [bytes(head), *chunks]


def decode_response(api_key: int, version: int, frame: Any) -> tuple[int, Struct]:
    """-> (correlation id, body) of one response frame (size prefix excluded)."""
    buf = memoryview(frame)
    if len(buf) < 4:
        raise DecodeError("response shorter than its correlation id")
    (correlation_id,) = _INT32.unpack_from(buf, 0)
    pos = 4
    if response_header_version(api_key, version) >= 1:
        r = Reader(buf, pos)
        _read_tagged_section(_TagHolder(), {}, r, version)
        pos = r.pos
    spec = wire_apis()[api_key].response
    body, end = codec.decode_from(spec, buf, pos, version)
    if end != len(buf):
        raise DecodeError(f"{spec.name} v{version}: {len(buf) - end} trailing bytes")
    return correlation_id, body
