"""The DescribeWhy schema (protocol/spec/pybroker/describe_why.py): both codecs agree and
round-trip, hostile frames only raise DecodeError at a small memory cost, and the key
stays out of Kafka's catalogue and out of ApiVersions while the wire layer knows it."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from broker.dispatch import REGISTRY, api_versions_body, load_handlers
from protocol import codec
from protocol.api_keys import PybrokerApiKey, api_name, is_pybroker_api
from protocol.codec_reference import decode_ref, encode_ref
from protocol.headers import RequestHeader, decode_request, encode_request
from protocol.primitives import DecodeError
from protocol.spec import all_apis, api, pybroker_apis, wire_apis
from tests.protocol_gen import random_message
from tests.unit.protocol.test_decode_limits import hostile_frames

KEY = PybrokerApiKey.DESCRIBE_WHY


def test_the_key_is_ours_not_kafkas() -> None:
    assert KEY == 10000 and is_pybroker_api(KEY)
    assert KEY not in all_apis() and KEY in pybroker_apis() and KEY in wire_apis()
    assert api(KEY).name == "DescribeWhy" == api_name(KEY)
    assert api(KEY).request.is_flexible(0)


@pytest.mark.parametrize("kind", ["request", "response"])
def test_codecs_agree_and_round_trip(kind: str) -> None:
    spec = getattr(api(KEY), kind)
    rng = random.Random(f"why/{kind}")
    for _ in range(20):
        msg = random_message(spec, 0, rng)
        data = codec.encode(msg, 0)
        assert data == encode_ref(msg, 0, spec)
        back = codec.decode(spec, data, 0)
        assert back == decode_ref(spec, data, 0) == msg


def test_a_request_frame_round_trips_through_the_header_layer() -> None:
    spec = api(KEY).request
    res = spec.structs["WhyResource"]
    body = spec.new(resources=[res.new(resource_type=2, resource_name="t", partition=3)])
    frame = encode_request(RequestHeader(KEY, 0, 7, "c"), body)
    header, back = decode_request(frame)
    assert (header.api_key, header.correlation_id, header.client_id) == (KEY, 7, "c")
    assert back == body


def test_hostile_frames_raise_decode_error_cheaply() -> None:
    spec = api(KEY).request
    frames = list(hostile_frames(spec, 0))
    assert len(frames) >= 2
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for frame in frames:
            tracemalloc.reset_peak()
            with pytest.raises(DecodeError):
                codec.decode(spec, frame, 0)
            with pytest.raises(DecodeError):
                decode_ref(spec, frame, 0)
            assert tracemalloc.get_traced_memory()[1] - base < 1024 * 1024
    finally:
        tracemalloc.stop()


def test_served_but_not_advertised() -> None:
    load_handlers()
    assert KEY in REGISTRY
    advertised = {k.api_key for k in api_versions_body().api_keys}
    assert KEY not in advertised
    assert advertised and all(k in all_apis() for k in advertised)
