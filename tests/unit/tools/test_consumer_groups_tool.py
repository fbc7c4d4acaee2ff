"""``pybroker consumer-groups``: argument checks, ConsumerProtocol assignment decoding and
Kafka 4.0's column layouts for classic and consumer (KIP-848) groups (the whole tool
against real brokers is in tests/integration/test_consumer_groups_tool.py and
tests/integration/groups/test_consumer_group_tooling.py)."""

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


def test_offsets_verbose_adds_the_commits_leader_epoch() -> None:
    rows = [cg.OffsetRow("g", "t", 0, 5, 12, "c-1", "/h", "cl", leader_epoch=3),
            cg.OffsetRow("g", "t", 1, None, 7)]
    lines = cg.format_offsets(rows, verbose=True)
    assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET",
                                "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert lines[2].split() == ["g", "t", "0", "3", "5", "12", "7", "c-1", "/h", "cl"]
    assert lines[3].split()[3] == "-"
    assert lines[1].index("CURRENT-OFFSET") == lines[2].index("5 ")
    d = cg.GroupDescription("g", "Empty", "classic", "", (0, "h", 1), [])
    by_epoch = cg.offset_rows(d, {("t", 0): 4, ("t", 1): 6}, {}, {("t", 0): 2, ("t", 1): -1})
    assert [r.leader_epoch for r in by_epoch] == [2, None]


def test_lag_needs_both_offsets() -> None:
    assert cg.OffsetRow("g", "t", 0, 3, 10).lag == 7
    assert cg.OffsetRow("g", "t", 0, -1, 10).lag is None
    assert cg.OffsetRow("g", "t", 0, 3, None).lag is None


def test_members_state_reset_and_delete_offsets_tables() -> None:
    m = cg.MemberRow("g", "c-1", "", "/h", "cl", (("t", 2), ("t", 10), ("u", 0)))
    lines = cg.format_members([m], verbose=True)
    assert lines[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                                "TARGET-ASSIGNMENT"]
    assert "GROUP-INSTANCE-ID" not in lines[1]
    # a classic member: no epochs, no target; Kafka 4.0's "topic:p,p;topic:p"
    assert lines[2].split()[-5:] == ["3", "-", "t:2,10;u:0", "-", "-"]
    assert lines[1].index("CURRENT-ASSIGNMENT") == lines[2].index("t:2,10")
    plain = cg.format_members([m], verbose=False)
    assert plain[1].rstrip().endswith("#PARTITIONS") and plain[2].split()[-1] == "3"
    static = cg.format_members([cg.MemberRow("g", "c-1", "inst-1", "/h", "cl", ())], False)
    assert "GROUP-INSTANCE-ID" in static[1] and "inst-1" in static[2]
    st = cg.format_state("g", "127.0.0.1:9092  (0)", "range", "Stable", 3)
    assert st[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                             "#MEMBERS"]
    assert st[2].split() == ["g", "127.0.0.1:9092", "(0)", "range", "Stable", "3"]
    assert st[1].index("STATE") == st[2].index("Stable")
    plan = cg.format_reset_plan({"g": {("t", 1): 9, ("t", 0): 4}, "h": {}})
    assert plan[1] == f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}"
    assert [r.split() for r in plan[2:]] == [["g", "t", "0", "4"], ["g", "t", "1", "9"]]
    assert cg.format_reset_plan({"g": {}}) == []
    deleted = cg.format_delete_offsets({("t", 0): 0, ("t", 1): 86, ("x", -1): 3})
    assert deleted[2].split() == ["t", "0", "Successful"]
    assert deleted[3].split()[:3] == ["t", "1", "Error:"] and "GROUP_SUBSCRIBED_TO_TOPIC" in deleted[3]
    assert "Not Provided" in deleted[4]


def test_consumer_group_members_show_epochs_and_both_assignments() -> None:
    """KIP-848 members: member epoch, current vs target assignment, the group's target
    epoch; UPGRADED only while classic and consumer members share the group."""
    a = cg.MemberRow("cg", "m-a", "", "/h", "rdkafka", (("t", 0), ("t", 1)),
                     (("t", 0),), current_epoch=7, target_epoch=8, upgraded=True)
    b = cg.MemberRow("cg", "m-b", "", "/h", "rdkafka", (), (("t", 1),), current_epoch=8,
                     target_epoch=8, upgraded=True)
    lines = cg.format_members([a, b], verbose=True)
    assert "UPGRADED" not in lines[1]
    assert lines[2].split()[-5:] == ["2", "7", "t:0,1", "8", "t:0"]
    assert lines[3].split()[-5:] == ["0", "8", "-", "8", "t:1"]
    assert lines[1].index("TARGET-EPOCH") == lines[2].index("8 ", lines[2].index("t:0,1"))
    classic = cg.MemberRow("cg", "m-c", "", "/h", "java", (("t", 2),), (("t", 2),), 8, 8,
                           upgraded=False)
    mixed = cg.format_members([a, classic], verbose=True)
    assert mixed[1].split()[-1] == "UPGRADED"
    assert mixed[2].split()[-1] == "true" and mixed[3].split()[-1] == "false"


def test_state_verbose_shows_epochs_and_dashes_for_classic() -> None:
    st = cg.format_state("cg", "127.0.0.1:9092  (1)", "uniform", "Reconciling", 2,
                         verbose=True, group_epoch=5, assignment_epoch=4)
    assert st[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE",
                             "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
    assert st[2].split() == ["cg", "127.0.0.1:9092", "(1)", "uniform", "Reconciling", "5",
                             "4", "2"]
    assert st[1].index("TARGET-ASSIGNMENT-EPOCH") == st[2].index("4 ")
    classic = cg.format_state("g", "h:1  (0)", "", "Empty", 0, verbose=True)
    assert classic[2].split() == ["g", "h:1", "(0)", "-", "Empty", "-", "-", "0"]


def test_list_with_type_and_state_columns() -> None:
    rows = [("a-classic", "Classic", "Stable"), ("b-new", "Consumer", "Reconciling")]
    both = cg.format_listing(rows, with_type=True, with_state=True)
    assert [ln.split() for ln in both] == [["GROUP", "TYPE", "STATE"],
                                          ["a-classic", "Classic", "Stable"],
                                          ["b-new", "Consumer", "Reconciling"]]
    assert both[0].index("TYPE") == 26 and both[0].index("STATE") == 47   # 15+10, +1+20
    assert [ln.split() for ln in cg.format_listing(rows, True, False)][1] == ["a-classic",
                                                                             "Classic"]
    assert args("--list", "--type", "CONSUMER,classic").types == {"consumer", "classic"}
    assert args("--list", "--type").types == set() and args("--list", "--type").type == ""
    assert args("--list", "--state", "reconciling,Assigning").states == {"Reconciling",
                                                                        "Assigning"}
    for bad in (["--list", "--type", "share"], ["--describe", "--group", "g", "--type"]):
        with pytest.raises(ToolError):
            args(*bad)


def test_offset_rows_order_members_then_unassigned() -> None:
    def member(mid: str, tps: tuple[tuple[str, int], ...]) -> SimpleNamespace:
        return SimpleNamespace(member_id=mid, host="/h", client_id="c", assignment=tps)
    big, small, idle = member("m-big", (("t", 3), ("t", 1))), member("m-small", (("t", 0),)), \
        member("m-idle", ())
    d = cg.GroupDescription("g", "Stable", "consumer", "uniform", (0, "h", 1),
                            [small, idle, big], 4, 4)
    rows = cg.offset_rows(d, {("t", 1): 5, ("t", 2): 8}, {("t", p): 10 for p in range(4)})
    assert [(r.partition, r.consumer_id) for r in rows] == [
        (1, "m-big"), (3, "m-big"), (0, "m-small"), (2, "-")]
    assert [r.lag for r in rows] == [5, None, None, 2]


def test_clamp_to_the_log() -> None:
    assert cg.clamp(50, 10, 40) == 40
    assert cg.clamp(5, 10, 40) == 10
    assert cg.clamp(20, 10, 40) == 20
    assert cg.clamp(20, None, None) == 20
