"""The bounded histories (broker/why/isr_history.py, group_history.py) and the
reason texts (reasons.py)."""

from __future__ import annotations

import pytest

from broker.why import reasons
from coordinator.group.why import reasons as group_reasons
from broker.why.broker_status import ZkSessionWatch
from coordinator.group.why.group_history import GroupHistories, GroupHistory, Trigger
from broker.why.isr_history import IsrHistory, ProposalNote
from protocol.why_model import EXPAND, SHRINK


def test_isr_history_keeps_the_last_capacity_changes_oldest_first() -> None:
    h = IsrHistory(capacity=4)
    isr = {1, 2, 3}
    for t in range(10):
        before, isr = isr, (isr - {3}) if 3 in isr else (isr | {3})
        h.commit(before, isr, t)
    changes = h.changes()
    assert len(changes) == 4
    assert [c.time_ms for c in changes] == [6, 7, 8, 9]
    assert [c.kind for c in changes] == [SHRINK, EXPAND, SHRINK, EXPAND]


def test_isr_history_uses_the_note_of_the_proposal_once() -> None:
    h = IsrHistory()
    h.propose(SHRINK, 3, ProposalNote("slow", 31_000, 12))
    [c] = h.commit({1, 2, 3}, {1, 2}, 5)
    assert (c.reason, c.lag_ms, c.lag_messages, c.isr_after) == ("slow", 31_000, 12, [1, 2])
    fallback = {(SHRINK, 2): ProposalNote("by the controller", 0, -1)}
    h.commit({1, 2, 3}, {1}, 6, fallback)   # 3's note was used up: a bare entry
    _, c2, c3 = h.changes()
    assert (c2.replica, c2.reason) == (2, "by the controller")
    assert (c3.replica, c3.reason) == (3, "removed from the ISR")
    with pytest.raises(ValueError):
        h.propose("sideways", 1, ProposalNote("", 0, 0))
    with pytest.raises(ValueError):
        IsrHistory(capacity=0)


def test_group_history_closes_open_events_with_the_generation() -> None:
    h = GroupHistory(capacity=3)
    join = Trigger("join", "m-1", "c-1", "/127.0.0.1", "a new member joined")
    h.record(join, 1)
    assert h.events()[0].generation == -1          # open: shown as -1
    h.completed(4)
    h.record(Trigger("leave", "m-2", "c-2", "/h", "left"), 2)
    h.record(Trigger("static-replace", "m-3", "c-3", "/h", "x"), 3, generation=4)
    h.failed()
    h.record(Trigger("timeout", "m-4", "c-4", "/h", "t"), 4)
    assert [(e.kind, e.generation) for e in h.events()] == [
        ("leave", -1), ("static-replace", 4), ("timeout", -1)]   # capacity 3: the join fell off
    h.completed(5)
    assert h.events()[-1].generation == 5 and h.events()[0].generation == -1


def test_group_histories_forget_the_least_recently_written_group() -> None:
    hs = GroupHistories(capacity=2, max_groups=2)
    t = Trigger("join", "m", "c", "h", "r")
    hs.of("a").record(t, 1)
    hs.of("b").record(t, 2)
    hs.of("a").record(t, 3)                        # a is now the most recent
    hs.of("c").record(t, 4)
    assert len(hs) == 2 and hs.events("b") == [] and len(hs.events("a")) == 2
    assert hs.events("unknown") == []


def test_reason_texts() -> None:
    assert reasons.shrink_reason(lag_ms=31_002, max_lag_ms=30_000, since_fetch_ms=31_000,
                                 lag_messages=1234) == (
        "not caught up for 31,002 ms (replica.lag.time.max.ms=30000); no fetch from it for "
        "31,000 ms; 1,234 messages behind")
    slow = reasons.shrink_reason(lag_ms=31_002, max_lag_ms=30_000, since_fetch_ms=20,
                                 lag_messages=-1)
    assert "fetching (last fetch 20 ms ago) but slower than the log grows" in slow
    assert "messages behind" not in slow
    assert "no fetch from it since this broker became leader" in reasons.shrink_reason(
        lag_ms=5, max_lag_ms=1, since_fetch_ms=-1, lag_messages=-1)
    assert group_reasons.leave_reason("the consumer is being closed") == (
        "left the group: the consumer is being closed")
    assert group_reasons.leave_reason(None) == "left the group (no reason given)"
    assert group_reasons.timeout_reason(6000) == "no heartbeat within session.timeout.ms=6,000"
    assert group_reasons.join_reason(None, first=True) == "first member of a new group"
    assert group_reasons.join_reason("rebalance", first=False) == \
        "a new member joined (client: rebalance)"


def test_zk_session_watch_follows_the_store() -> None:
    class Store:
        closed = False

        def __init__(self) -> None:
            self.conn: list = []
            self.sess: list = []

        def add_connection_listener(self, fn) -> None:  # noqa: ANN001
            self.conn.append(fn)

        def add_session_listener(self, fn) -> None:  # noqa: ANN001
            self.sess.append(fn)

    clock = [100.0]
    w = ZkSessionWatch(monotonic=lambda: clock[0])
    assert w.state == "NOT_STARTED"
    s = Store()
    w.attach(s)
    assert w.state == "CONNECTED"
    s.conn[0]("SUSPENDED")
    assert w.state == "SUSPENDED"
    s.sess[0]("LOST")
    assert w.state == "LOST"
    s.sess[0]("RENEWED")
    assert w.state == "CONNECTED"
    clock[0] = 101.5
    assert w.uptime_ms == 1500
    s.closed = True
    assert w.state == "CLOSED"
