"""Page rendering with hand-made model values (no cluster): the facts appear,
the why is spelled out, and every cluster-supplied string is escaped."""

from __future__ import annotations

import re

from client.operator_admin import LogDirInfo, ReplicaInfo
from protocol.why_model import (EXPAND, SHRINK, BrokerStatus, GroupWhy, IsrChange, PartitionWhy,
                              RebalanceEvent, ReplicaProgress)
from tools.console.decode import describe_bytes
from tools.console.model import (BrokerRow, BrowseQuery, BrowseView, GroupSummary, GroupView,
                                 MemberRow, Message, OffsetRow, Overview, PartitionRow,
                                 PartitionView, TopicSummary, TopicView)
from tools.console.pages_cluster import render_overview
from tools.console.pages_groups import render_group, render_groups
from tools.console.pages_messages import parse_browse_query, parse_time, render_messages
from tools.console.pages_partition import render_partition
from tools.console.pages_topics import render_topic, render_topics
from tools.console.why_source import WhyAnswer

EVIL = "<script>alert(1)</script>"
NOW = 1_764_111_600_000


def no_raw_script(page: str) -> None:
    assert "<script" not in page.lower(), "unescaped markup from the cluster"


def test_overview_brokers_zk_state_and_escaping() -> None:
    o = Overview("c-<id>", 2, [
        BrokerRow(1, "127.0.0.1", 9001, None,
                  WhyAnswer(BrokerStatus(1, "CONNECTED", False, 2, 65_000))),
        BrokerRow(2, "127.0.0.1", 9002, EVIL, WhyAnswer(BrokerStatus(2, "SUSPENDED", True, 2, 5))),
        BrokerRow(3, "h", 9003, None, WhyAnswer(None, "client.why_admin cannot be imported")),
    ], topics=3, partitions=7, under_replicated=1, offline=0)
    html = render_overview(o, refresh_s=5)
    no_raw_script(html)
    assert "c-&lt;id&gt;" in html and "&lt;script&gt;" in html
    assert "CONNECTED" in html and "SUSPENDED" in html
    assert "why unavailable: client.why_admin cannot be imported" in html
    assert '<meta http-equiv="refresh" content="5">' in html
    assert re.search(r'<tr class="bad"><td>2</td>', html)      # not CONNECTED: highlighted
    assert "<td>1m 5s</td>" in html and "<td>0s</td>" in html


def test_overview_log_dirs() -> None:
    ok = LogDirInfo("/data/<a>", 0, {("t", 0): ReplicaInfo(1536, 0, False),
                                      ("t", 1): ReplicaInfo(512, 0, False)}, 4 << 30, 1 << 30)
    bad = LogDirInfo("/data/b", 56)
    status = WhyAnswer(BrokerStatus(1, "CONNECTED", False, 1, 1))
    o = Overview("c", 1, [BrokerRow(1, "h", 1, None, status, (ok,)),
                          BrokerRow(2, "h", 2, None, status, (ok, bad)),
                          BrokerRow(3, "h", 3, None, status, (), "no answer in time")], 1, 2, 0, 0)
    html = render_overview(o)
    assert "/data/&lt;a&gt;: 2 replica(s), 2.0 KiB, 1.0 GiB free of 4.0 GiB" in html
    assert "<strong>/data/b</strong>: offline (KAFKA_STORAGE_ERROR)" in html
    assert re.search(r'<tr class="bad"><td>2</td>', html)
    assert not re.search(r'<tr class="bad"><td>1</td>', html)
    assert "unknown: no answer in time" in html


def test_topics_list_highlights_under_replicated() -> None:
    html = render_topics([TopicSummary("ok", False, "", 3, 3, 0, 0),
                          TopicSummary(EVIL, False, "", 2, 3, 1, 0),
                          TopicSummary("down", False, "", 1, 1, 0, 1)])
    no_raw_script(html)
    assert 'href="/topic?name=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"' in html
    assert '<tr class="urp"><td><a href="/topic?name=%3Cscript' in html
    assert '<tr class="offline"><td><a href="/topic?name=down"' in html
    assert "1 under-replicated partition(s)" in html


def test_topic_page_rows_leos_and_links() -> None:
    rows = [PartitionRow(0, 1, 4, (1, 2, 3), (1, 2, 3), (), 0, 10, 10, {1: 10, 2: 10, 3: 10}),
            PartitionRow(1, 2, 5, (2, 3, 1), (2, 1), (), 0, 7, 9, {2: 9, 1: 7})]
    html = render_topic(TopicView("t&t", False, "", rows))
    assert 'href="/partition?topic=t%26t&amp;p=1"' in html
    assert "<td>2, 1</td><td>3</td>" in html                  # ISR, then who is out of it
    assert "2: 9 (leader), 3: ?, 1: 7" in html
    assert '<tr class="urp"><td><a href="/partition?topic=t%26t&amp;p=1"' in html
    assert "Topic t&amp;t" in html


def _why() -> PartitionWhy:
    return PartitionWhy(
        topic="t", partition=0, leader=1, leader_epoch=3, isr=[1, 2], high_watermark=90,
        log_end_offset=100, hw_held_by=[2],
        replicas=[ReplicaProgress(1, 100, NOW, -1, True),
                  ReplicaProgress(2, 90, NOW - 500, NOW, True),
                  ReplicaProgress(3, 40, NOW - 40_000, NOW - 39_000, False)],
        isr_changes=[IsrChange(NOW - 60_000, EXPAND, 3, "caught up", 0, 0, [1, 2, 3]),
                     IsrChange(NOW - 30_000, SHRINK, 3,
                               "not caught up for 3,210 ms (replica.lag.time.max.ms=3000) "
                               + EVIL, 3210, 60, [1, 2])])


def test_partition_page_says_why_isr_and_hw() -> None:
    row = PartitionRow(0, 1, 3, (1, 2, 3), (1, 2), (), 0, 90, 100, {1: 100, 2: 90, 3: 40})
    html = render_partition(PartitionView("t", row, WhyAnswer(_why()), NOW, {1: 2048, 2: 100}))
    no_raw_script(html)
    assert "1: 2.0 KiB, 2: 100 B, 3: ?" in html
    isr = html[html.index('id="isr-why"'):html.index('id="hw-why"')]
    assert "Broker 3 left the ISR" in isr
    assert "not caught up for 3,210 ms (replica.lag.time.max.ms=3000)" in isr
    assert "3,210 ms since it was last caught up, 60 messages behind the leader" in isr
    assert "the ISR became 1, 2" in isr and "30.0 s ago" in isr
    hw = html[html.index('id="hw-why"'):]
    assert "Broker 2 holds it back" in hw and "its LEO 90 vs the leader's 100" in hw
    assert "10 messages behind" in hw
    assert 'id="isr-changes"' in html and "<td>expand</td>" in html


def test_partition_page_without_why_or_record() -> None:
    row = PartitionRow(0, 1, 3, (1, 2), (1,), (), 0, 5, 5)
    html = render_partition(PartitionView("t", row, WhyAnswer(None, "no <answer>"), NOW))
    assert "why unavailable: no &lt;answer&gt;" in html
    assert "Under-replicated: 2 not in the ISR" in html
    why = PartitionWhy("t", 0, 1, 3, [1], 5, 5, [],
                       [ReplicaProgress(1, 5, NOW, -1, True),
                        ReplicaProgress(2, 3, -1, NOW - 1000, False)], [])
    html = render_partition(PartitionView("t", row, WhyAnswer(why), NOW))
    assert "Broker 2 is not in the ISR; it left before broker 1 became leader" in html
    assert "every ISR replica has every message" in html


def test_groups_and_group_page_with_rebalance_why() -> None:
    html = render_groups([GroupSummary(EVIL, "Stable"), GroupSummary("g", "Empty")])
    no_raw_script(html)
    assert 'href="/group?id=g"' in html
    why = GroupWhy("g", "Stable", 4, [
        RebalanceEvent(NOW - 9000, 3, "join", "m-1", "c1", "/127.0.0.1", ""),
        RebalanceEvent(NOW - 2000, 4, "timeout", "m-<2>", "c<2>", "/10.0.0.2",
                       "session timeout 10000 ms expired")])
    v = GroupView("g", "Stable", "consumer", "range", (1, "127.0.0.1", 9001),
                  [MemberRow("m-1", None, "c1", "/127.0.0.1", (("t", 0), ("t", 1), ("u", 0)))],
                  [OffsetRow("t", 0, 5, 12, "c1"), OffsetRow("t", 1, -1, 3, "c1"),
                   OffsetRow("u", 0, 4, 4, "c1")], WhyAnswer(why), NOW)
    html = render_group(v)
    no_raw_script(html)
    why_html = html[html.index('id="rebalance-why"'):html.index("<h2>Members")]
    assert "member m-&lt;2&gt; (client c&lt;2&gt;, host /10.0.0.2) timed out: session timeout " \
           "10000 ms expired" in why_html
    assert "to generation 4" in why_html and "2.0 s ago" in why_html
    assert "t: 0, 1; u: 0" in html
    assert '<tr class="lagging"><td><a href="/topic?name=t">t</a></td><td>0</td><td>5</td>' \
           '<td>12</td><td>7</td>' in html
    assert "<dt>Total lag</dt><dd>7</dd>" in html


def test_consumer_group_page_shows_epochs_and_current_vs_target() -> None:
    """A KIP-848 group: type, group and assignment epochs, each member's epoch, current and
    target assignment and what its reconciliation waits for; why = its epoch bumps."""
    html = render_groups([GroupSummary("cg", "Reconciling", "Consumer"),
                          GroupSummary("old", "Stable", "Classic")])
    assert "<th>Type</th>" in html and "<td>Consumer</td>" in html
    why = GroupWhy("cg", "Reconciling", 6, [
        RebalanceEvent(NOW - 5000, 5, "member-joined", "m-a", "rdkafka", "/127.0.0.1",
                       "joined with epoch 0"),
        RebalanceEvent(NOW - 1000, 6, "member-fenced", "m-<b>", "java", "/10.0.0.2",
                       "session timeout 45000 ms expired")])
    members = [MemberRow("m-a", None, "rdkafka", "/127.0.0.1", (("t", 0), ("t", 1)), 5,
                         (("t", 0),), True),
               MemberRow("m-c", None, "rdkafka", "/127.0.0.1", (), 6, (("t", 1),), True),
               MemberRow("m-d", "inst-d", "rdkafka", "/127.0.0.1", (("t", 2),), 6, (("t", 2),),
                         True)]
    v = GroupView("cg", "Reconciling", "consumer", "uniform", (1, "127.0.0.1", 9001), members,
                  [OffsetRow("t", 0, 5, 12, "rdkafka")], WhyAnswer(why), NOW, "consumer", 6, 6)
    html = render_group(v)
    no_raw_script(html)
    assert "<dt>Type</dt><dd>consumer (KIP-848)</dd>" in html
    assert "<dt>Group epoch</dt><dd>6</dd><dt>Assignment epoch</dt><dd>6</dd>" in html
    assert "<dt>Assignor</dt><dd>uniform</dd>" in html
    rows = html[html.index('id="members"'):]
    assert "<th>Member epoch</th><th>Reconciliation</th><th>Current assignment</th>" \
           "<th>Target assignment</th>" in rows
    assert "<td>5</td><td>revoking t: 1</td><td>t: 0, 1</td><td>t: 0</td>" in rows
    assert "<td>6</td><td>awaiting t: 1</td><td>-</td><td>t: 1</td>" in rows
    assert "<td>inst-d</td>" in rows and "<td>6</td><td>stable</td>" in rows
    assert "Protocol</th>" not in rows           # no classic member: not a mixed group
    assert "<h2>Why its group epoch last moved</h2>" in html
    why_html = html[html.index('id="rebalance-why"'):html.index("<h2>Members")]
    assert "Last group epoch bump</strong>" in why_html
    assert "to group epoch 6: member m-&lt;b&gt; (client java, host /10.0.0.2) was fenced: " \
           "session timeout 45000 ms expired" in why_html
    assert "<th>Group epoch</th>" in why_html
    classic_member = MemberRow("m-j", None, "java", "/h", (("t", 3),), 6, (("t", 3),), False)
    mixed = render_group(GroupView("cg", "Stable", "consumer", "uniform", (1, "h", 1),
                                   [members[2], classic_member], [], WhyAnswer(why), NOW,
                                   "consumer", 6, 6))
    assert "<th>Protocol</th>" in mixed and "<td>classic</td>" in mixed


def test_message_browser_decodes_and_escapes() -> None:
    msgs = [Message(0, 7, NOW, EVIL.encode(), b'{"a": [1, 2], "b": "<i>"}',
                    [("h<1>", b"\xff\x00"), ("n", None)]),
            Message(0, 8, NOW, None, b"\x00\x01binary\xfe", [])]
    v = BrowseView(BrowseQuery("t", 0, 7, None, 2), 7, 9, 0, msgs)
    html = render_messages(v)
    no_raw_script(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<pre class="json">{\n  &quot;a&quot;: [\n    1,\n    2\n  ],' in html
    assert "<strong>h&lt;1&gt;</strong>" in html and "ff 00" in html
    assert "00 01 62 69 6e 61 72 79 fe" in html
    assert 'href="/messages?topic=t&amp;p=0&amp;offset=9&amp;n=2"' in html


def test_browse_query_parsing() -> None:
    q = parse_browse_query({"topic": "t", "p": "2", "offset": "5", "n": "3"})
    assert (q.topic, q.partition, q.offset, q.timestamp_ms, q.count) == ("t", 2, 5, None, 3)
    q = parse_browse_query({"topic": "t", "ts": "2026-11-25T23:00:00"})
    assert q.timestamp_ms == parse_time("2026-11-25T23:00:00Z") == 1795647600000
    for bad in ({"p": "x"}, {"n": "100000"}, {"offset": "-1"}, {"ts": "yesterday"}):
        try:
            parse_browse_query(bad)
        except ValueError as e:
            assert next(iter(bad)) in str(e)
        else:
            raise AssertionError(f"{bad} accepted")


def test_describe_bytes() -> None:
    assert describe_bytes(None) == ("null", "")
    assert describe_bytes(b"hello") == ("text", "hello")
    assert describe_bytes(b"42") == ("text", "42")
    assert describe_bytes(b'[1,{"x":"\xc3\xa9"}]') == (
        "json", '[\n  1,\n  {\n    "x": "é"\n  }\n]')
    assert describe_bytes(b"{not json") == ("text", "{not json")
    assert describe_bytes(b"\xde\xad\xbe\xef") == ("hex", "de ad be ef")
    kind, text = describe_bytes(b"a" * 20000)
    assert kind == "text" and text.endswith("... 3616 more bytes")
