"""``pybroker consumer-groups``: argument checks, ConsumerProtocol assignment decoding and
Kafka's column layouts (the whole tool against real brokers is in
tests/integration/test_consumer_groups_tool.py)."""

from __future__ import annotations

import io
import struct
from types import SimpleNamespace

import pytest

from tools import ToolError
from tools import consumer_groups as cg


def args(*argv: str) -> object:
    return cg.parse_args(["--bootstrap-server", "127.0.0.1:9092", *argv])


def test_actions_and_scopes_are_checked() -> None:
    a = args("--reset-offsets", "--group", "g", "--topic", "t:0,2", "--topic", "u",
             "--to-offset", "5", "--execute")
    assert a.action == "reset_offsets" and a.scenario == "to_offset" and a.to_offset == 5
    assert a.topic_partitions == [("t", [0, 2]), ("u", None)]
    for bad in (["--describe"],                                       # no group
                ["--reset-offsets", "--group", "g", "--to-latest"],   # no scope
                ["--reset-offsets", "--group", "g", "--topic", "t"],  # no scenario
                ["--reset-offsets", "--group", "g", "--all-topics", "--topic", "t",
                 "--to-latest"],
                ["--delete-offsets", "--group", "g"],                 # no topic
                ["--describe", "--group", "g", "--to-latest"],
                ["--describe", "--group", "g", "--members", "--offsets"],
                ["--list", "--state", "Bogus"],
                ["--reset-offsets", "--group", "g", "--topic", "t:x", "--to-latest"]):
        with pytest.raises(ToolError):
            args(*bad)
    out, err = io.StringIO(), io.StringIO()
    assert cg.main(["--bootstrap-server", "h:1", "--list", "--describe"],
                   stdout=out, stderr=err) == 2
    assert "not allowed with argument" in err.getvalue()
    assert cg.main(["--bootstrap-server", "h:1", "--describe"], stdout=out, stderr=err) == 1


def test_list_state_filter_is_case_insensitive() -> None:
    assert args("--list", "--state", "stable,EMPTY").states == {"Stable", "Empty"}
    assert args("--list", "--state").states == set()   # bare --state: show the column


def test_datetime_and_duration() -> None:
    assert cg.parse_datetime("2024-01-02T03:04:05.678") == 1704164645678      # no zone: UTC
    assert cg.parse_datetime("2024-01-02T03:04:05.678Z") == 1704164645678
    assert cg.parse_datetime("2024-01-02T05:04:05.678+02:00") == 1704164645678
    with pytest.raises(ToolError):
        cg.parse_datetime("2024-01-02")
    assert cg.parse_duration_ms("PT1H30M") == 5_400_000
    assert cg.parse_duration_ms("P1DT0.5S") == 86_400_500
    with pytest.raises(ToolError):
        cg.parse_duration_ms("PT")
    a = args("--reset-offsets", "--group", "g", "--all-topics", "--to-datetime",
             "2024-01-02T03:04:05.678", "--dry-run")
    assert a.timestamp_ms == 1704164645678


def assignment_bytes(parts: dict[str, list[int]], version: int = 3) -> bytes:
    out = struct.pack(">hi", version, len(parts))
    for topic, ps in parts.items():
        out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ps))
        out += b"".join(struct.pack(">i", p) for p in ps)
    return out + struct.pack(">i", -1)   # null user data


def test_decode_assignment() -> None:
    data = assignment_bytes({"orders": [4, 1], "b": []})
    assert cg.decode_assignment(data) == [("orders", 4), ("orders", 1)]
    assert cg.decode_assignment(b"") == []
    assert cg.decode_assignment(data[:9]) == []          # truncated -> nothing, no raise


def test_offsets_table_is_kafkas_layout() -> None:
    rows = [cg.OffsetRow("g", "t", 0, 5, 12, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
            cg.OffsetRow("g", "t", 1, None, 7)]
    lines = cg.format_offsets(rows)
    assert lines[0] == ""
    assert lines[1] == ("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  "
                        "LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            "
                        "CLIENT-ID")
    assert lines[2].split() == ["g", "t", "0", "5", "12", "7", "consumer-1-abc", "/127.0.0.1",
                                "consumer-1"]
    assert lines[3].split() == ["g", "t", "1", "-", "7", "-", "-", "-", "-"]
    long_id = "c" * 40
    wide = cg.format_offsets([cg.OffsetRow("g", "t", 0, 1, 1, long_id)])
    assert wide[1].index("HOST") == wide[2].index("-", wide[2].index(long_id))


def test_lag_needs_both_offsets() -> None:
    assert cg.OffsetRow("g", "t", 0, 3, 10).lag == 7
    assert cg.OffsetRow("g", "t", 0, -1, 10).lag is None
    assert cg.OffsetRow("g", "t", 0, 3, None).lag is None


def test_members_state_reset_and_delete_offsets_tables() -> None:
    m = cg.MemberRow("g", "c-1", "", "/h", "cl", (("t", 2), ("t", 10), ("u", 0)))
    lines = cg.format_members([m], verbose=True)
    assert lines[1].startswith("GROUP ") and lines[1].endswith("#PARTITIONS     ASSIGNMENT")
    assert "GROUP-INSTANCE-ID" not in lines[1]
    assert lines[2].endswith("3               (0), (10,2)")   # Kafka sorts as strings
    static = cg.format_members([cg.MemberRow("g", "c-1", "inst-1", "/h", "cl", ())], False)
    assert "GROUP-INSTANCE-ID" in static[1] and "inst-1" in static[2]
    st = cg.format_state("g", "127.0.0.1:9092  (0)", "range", "Stable", 3)
    assert st[2].split() == ["g", "127.0.0.1:9092", "(0)", "range", "Stable", "3"]
    plan = cg.format_reset_plan({"g": {("t", 1): 9, ("t", 0): 4}, "h": {}})
    assert plan[1] == f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}"
    assert [r.split() for r in plan[2:]] == [["g", "t", "0", "4"], ["g", "t", "1", "9"]]
    assert cg.format_reset_plan({"g": {}}) == []
    deleted = cg.format_delete_offsets({("t", 0): 0, ("t", 1): 86, ("x", -1): 3})
    assert deleted[2].split() == ["t", "0", "Successful"]
    assert deleted[3].split()[:3] == ["t", "1", "Error:"] and "GROUP_SUBSCRIBED_TO_TOPIC" in deleted[3]
    assert "Not Provided" in deleted[4]


def test_offset_rows_order_members_then_unassigned() -> None:
    big = SimpleNamespace(member_id="m-big", client_host="/h", client_id="c",
                          member_assignment=assignment_bytes({"t": [3, 1]}))
    small = SimpleNamespace(member_id="m-small", client_host="/h", client_id="c",
                            member_assignment=assignment_bytes({"t": [0]}))
    idle = SimpleNamespace(member_id="m-idle", client_host="/h", client_id="c",
                           member_assignment=b"")
    d = cg.GroupDescription("g", "Stable", "consumer", "range", (0, "h", 1), [small, idle, big])
    rows = cg.offset_rows(d, {("t", 1): 5, ("t", 2): 8}, {("t", p): 10 for p in range(4)})
    assert [(r.partition, r.consumer_id) for r in rows] == [
        (1, "m-big"), (3, "m-big"), (0, "m-small"), (2, "-")]
    assert [r.lag for r in rows] == [5, None, None, 2]


def test_clamp_to_the_log() -> None:
    assert cg.clamp(50, 10, 40) == 40
    assert cg.clamp(5, 10, 40) == 10
    assert cg.clamp(20, 10, 40) == 20
    assert cg.clamp(20, None, None) == 20
