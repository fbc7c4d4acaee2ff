"""client.consumer_protocol: subscription/assignment bytes and the range and
roundrobin assignors (Kafka's RangeAssignor / RoundRobinAssignor results)."""

from __future__ import annotations

import struct

import pytest

from client.consumer_protocol import (RANGE, ROUNDROBIN, assign, assignor_name,
                                      decode_assignment, decode_subscription, encode_assignment,
                                      encode_subscription)


def test_subscription_round_trip_and_layout() -> None:
    data = encode_subscription(["a", "bc"])
    assert data == b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x02bc" \
        + b"\xff\xff\xff\xff"
    assert decode_subscription(data) == ["a", "bc"]


def test_reads_a_later_version_by_its_leading_fields() -> None:
    # v1: + owned partitions [("a", [0])]; v2: + generation id
    v2 = (struct.pack(">hi", 2, 1) + b"\x00\x01a" + struct.pack(">i", -1)
          + struct.pack(">i", 1) + b"\x00\x01a" + struct.pack(">ii", 1, 0)
          + struct.pack(">i", 7))
    assert decode_subscription(v2) == ["a"]


def test_assignment_round_trip() -> None:
    tps = [("b", 1), ("a", 2), ("a", 0)]
    data = encode_assignment(tps)
    assert decode_assignment(data) == [("a", 0), ("a", 2), ("b", 1)]
    assert decode_assignment(b"") == []
    assert decode_assignment(encode_assignment([])) == []


@pytest.mark.parametrize("bad", [b"\x00", b"\x00\x00\x00\x00\x00\x05\x00\x01a",
                                 b"\x00\x00\xff\xff\xff\xff"])
def test_garbled_bytes_raise_value_error(bad: bytes) -> None:
    with pytest.raises(ValueError):
        decode_assignment(bad if len(bad) > 2 else bad + b"\x00")
    with pytest.raises(ValueError):
        decode_subscription(bad)


def test_range_gives_contiguous_ranges_extra_to_the_first_members() -> None:
    plan = assign(RANGE, {"m2": ["t"], "m1": ["t"], "m3": ["t"]}, {"t": 7})
    assert plan == {"m1": [("t", 0), ("t", 1), ("t", 2)], "m2": [("t", 3), ("t", 4)],
                    "m3": [("t", 5), ("t", 6)]}


def test_range_is_per_topic_among_its_subscribers() -> None:
    plan = assign(RANGE, {"a": ["x", "y"], "b": ["y"]}, {"x": 2, "y": 3, "z": 4})
    assert plan == {"a": [("x", 0), ("x", 1), ("y", 0), ("y", 1)], "b": [("y", 2)]}


def test_roundrobin_deals_in_turn_skipping_non_subscribers() -> None:
    plan = assign(ROUNDROBIN, {"a": ["x"], "b": ["x"]}, {"x": 5})
    assert plan == {"a": [("x", 0), ("x", 2), ("x", 4)], "b": [("x", 1), ("x", 3)]}
    plan = assign(ROUNDROBIN, {"a": ["x", "y"], "b": ["y"]}, {"x": 2, "y": 2})
    assert sorted(plan["a"] + plan["b"]) == [("x", 0), ("x", 1), ("y", 0), ("y", 1)]
    assert all(t == "y" for t, _ in plan["b"])


def test_every_partition_once_whatever_the_group() -> None:
    for strategy in (RANGE, ROUNDROBIN):
        for members in range(1, 6):
            subs = {f"m{i}": ["t", "u"] for i in range(members)}
            plan = assign(strategy, subs, {"t": 4, "u": 3})
            every = sorted(tp for tps in plan.values() for tp in tps)
            assert every == sorted([("t", p) for p in range(4)] + [("u", p) for p in range(3)])


def test_assignor_names() -> None:
    assert assignor_name("org.apache.kafka.clients.consumer.RangeAssignor") == RANGE
    assert assignor_name("org.apache.kafka.clients.consumer.RoundRobinAssignor") == ROUNDROBIN
    assert assignor_name(" RoundRobin ") == ROUNDROBIN
    with pytest.raises(ValueError, match="cooperative-sticky"):
        assignor_name("cooperative-sticky")
