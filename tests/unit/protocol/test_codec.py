"""The codec over every API and version: compiled == reference, round trips,
tagged-field rules, and hostile bytes that must only ever raise DecodeError."""

from __future__ import annotations

import random

import pytest

from protocol.codec import decode, encode
from protocol.codec_reference import decode_ref, encode_ref
from protocol.primitives import DecodeError, EncodeError
from protocol.schema import MessageSpec, Struct
from protocol.spec import all_apis, api
from tests.protocol_gen import random_message

CASES = [
    pytest.param(spec, v, id=f"{spec.name}-v{v}")
    for a in all_apis().values() for spec in (a.request, a.response) for v in spec.versions()
]
SEEDS = 6


@pytest.mark.parametrize("spec, version", CASES)
def test_compiled_agrees_with_reference_and_round_trips(spec: MessageSpec, version: int) -> None:
    rng = random.Random(f"{spec.name}/{version}")
    for _ in range(SEEDS):
        msg = random_message(spec, version, rng)
        data = encode(msg, version)
        assert data == encode_ref(msg, version, spec)
        back = decode(spec, data, version)
        assert back == decode_ref(spec, data, version)
        assert back == msg
        assert encode(back, version) == data


@pytest.mark.parametrize("spec, version", CASES)
def test_truncated_and_garbage_input_only_raises_decode_error(spec: MessageSpec,
                                                              version: int) -> None:
    rng = random.Random(f"garbage/{spec.name}/{version}")
    data = encode(random_message(spec, version, rng), version)
    cuts = sorted({rng.randrange(len(data)) for _ in range(8)} | {0}) if data else []
    for cut in cuts:
        with pytest.raises(DecodeError):
            decode(spec, data[:cut], version)
    for _ in range(20):
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 64)))
        try:
            decode(spec, junk, version)
        except DecodeError:
            pass


def test_unknown_tagged_fields_round_trip_in_order() -> None:
    spec = api(3).response
    msg = spec.new(cluster_id="c", unknown_tags={7: b"\x01\x02", 100: b""})
    data = encode(msg, 12)
    back = decode(spec, data, 12)
    assert back.unknown_tags == {7: b"\x01\x02", 100: b""}
    assert encode(back, 12) == data


def test_tagged_field_written_only_when_it_differs_from_default() -> None:
    spec = api(1).response
    part = spec.structs["PartitionData"]
    topic = spec.structs["FetchableTopicResponse"]
    plain = spec.new(responses=[topic.new(topic="t", partitions=[part.new()])])
    diverging = part.new(diverging_epoch=spec.structs["EpochEndOffset"].new(epoch=3, end_offset=9))
    tagged = spec.new(responses=[topic.new(topic="t", partitions=[diverging])])
    a, b = encode(plain, 12), encode(tagged, 12)
    assert len(b) > len(a)
    assert decode(spec, b, 12).responses[0].partitions[0].diverging_epoch.epoch == 3
    assert encode(tagged, 11) == encode(plain, 11)  # not flexible: the field does not exist


def test_null_where_not_nullable_is_an_encode_error() -> None:
    spec = api(0).request
    topic = spec.structs["TopicProduceData"]
    with pytest.raises(EncodeError):
        encode(spec.new(topic_data=[topic.new(name=None)]), 9)
    with pytest.raises(EncodeError):
        encode(spec.new(topic_data=None), 3)


def test_absurd_array_count_is_refused_without_allocating() -> None:
    # Metadata v1 request: topics array with a count of 2**31-1 and no elements
    with pytest.raises(DecodeError, match="count"):
        decode(api(3).request, b"\x7f\xff\xff\xff", 1)


def test_every_struct_builds_fresh_defaults_equal_to_the_schema_defaults() -> None:
    """The compiled ``__init__`` (schema._compile_init) fills each absent field as
    ``FieldSpec.default_value`` does, with a new list or struct per instance."""
    checked = 0
    for spec in all_apis().values():
        for message in (spec.request, spec.response):
            for struct in [message.struct, *message.structs.values()]:
                a, b = struct.new(), struct.new()
                for f in struct.fields:
                    want = f.default_value()
                    got = getattr(a, f.attr)
                    assert got == want, (message.name, struct.name, f.name)
                    if isinstance(want, (list, Struct)):
                        assert got is not getattr(b, f.attr), (struct.name, f.name)
                        checked += 1
    assert checked > 200


@pytest.mark.parametrize("spec, version", CASES[::7])
def test_compiled_eq_agrees_with_the_generic_one(spec: MessageSpec, version: int) -> None:
    """Each struct's unrolled ``__eq__`` (schema._compile_eq) answers as
    ``Struct.__eq__`` does: equal copies, one field changed, unknown tags None vs
    {} (equal) vs set (not), another type (NotImplemented)."""
    rng = random.Random(f"eq/{spec.name}/{version}")
    a = random_message(spec, version, rng)
    b = decode(spec, encode(a, version), version)
    assert type(a).__eq__ is not Struct.__eq__
    assert (a == b) is Struct.__eq__(a, b) is True
    for f in spec.struct.fields:
        if version not in f.versions:
            continue
        c = decode(spec, encode(a, version), version)
        setattr(c, f.attr, object())          # unequal to whatever a holds
        assert (a == c) is Struct.__eq__(a, c) is False, f.name
    c = decode(spec, encode(a, version), version)
    c.unknown_tags, a.unknown_tags = {}, None
    assert (a == c) is Struct.__eq__(a, c) is True
    c.unknown_tags = {99: b"x"}
    assert (a == c) is Struct.__eq__(a, c) is False
    assert type(a).__eq__(a, 1) is Struct.__eq__(a, 1) is NotImplemented
