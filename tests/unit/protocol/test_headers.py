"""Request/response headers: layouts by version and the named quirks."""

from __future__ import annotations

import struct

import pytest

from protocol.headers import (
    RequestHeader, UnknownApiKey, UnsupportedApiVersion, decode_request, decode_request_header,
    decode_response, encode_request, encode_response, request_header_version,
    response_header_version,
)
from protocol.spec import api


def test_header_versions_follow_flexibility_and_quirks() -> None:
    assert request_header_version(0, 8) == 1 and request_header_version(0, 9) == 2
    assert request_header_version(7, 0) == 0          # ControlledShutdown v0: no client id
    assert request_header_version(7, 1) == 1
    assert response_header_version(18, 3) == 0        # ApiVersions: always v0
    assert response_header_version(3, 9) == 1 and response_header_version(3, 8) == 0


def test_request_header_v2_bytes() -> None:
    body = api(18).request.new(client_software_name="x", client_software_version="1")
    frame = encode_request(RequestHeader(18, 3, 42, "cli"), body)
    # api_key, version, correlation id, classic client id, empty tag section
    assert frame[:14] == struct.pack(">hhih", 18, 3, 42, 3) + b"cli" + b"\x00"
    header, decoded = decode_request(frame)
    assert header == RequestHeader(18, 3, 42, "cli")
    assert decoded == body


def test_null_client_id_and_header_v0() -> None:
    frame = encode_request(RequestHeader(3, 1, 5, None), api(3).request.new(topics=None))
    assert frame[8:10] == b"\xff\xff"
    assert decode_request(frame)[0].client_id is None
    cs = encode_request(RequestHeader(7, 0, 9, "ignored"), api(7).request.new(broker_id=3))
    assert cs == struct.pack(">hhii", 7, 0, 9, 3)


def test_api_versions_response_header_has_no_tag_byte() -> None:
    body = api(18).response.new(error_code=35)
    chunks = encode_response(18, 3, 77, body)
    frame = b"".join(bytes(c) for c in chunks)
    assert frame[:4] == struct.pack(">i", 77)
    assert frame[4:6] == struct.pack(">h", 35)  # body starts right after the correlation id
    assert decode_response(18, 3, frame) == (77, body)


def test_flexible_response_header_has_tag_byte() -> None:
    body = api(3).response.new()
    frame = b"".join(bytes(c) for c in encode_response(3, 12, 1, body))
    assert frame[:5] == struct.pack(">i", 1) + b"\x00"
    assert decode_response(3, 12, frame)[1] == body


def test_unknown_key_and_version_still_give_the_correlation_id() -> None:
    raw = struct.pack(">hhih", 18, 99, 1234, 1) + b"c" + b"\x00" + b"\x00\x00\x00"
    header, _ = decode_request_header(raw)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 99, 1234)
    with pytest.raises(UnsupportedApiVersion):
        decode_request(raw)
    unknown = struct.pack(">hhih", 999, 0, 5, -1)
    assert decode_request_header(unknown)[0].correlation_id == 5
    with pytest.raises(UnknownApiKey):
        decode_request(unknown)
