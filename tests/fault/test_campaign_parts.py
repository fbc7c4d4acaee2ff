"""Unit tests of the virtual-host campaign's pure parts: the connectivity model
(fault_kinds.eligible), the leader-epoch cache comparison (replica_checks) and the
availability figures (availability.AckTimes, Figures)."""

from __future__ import annotations

from tests.fault.availability import AckTimes, Figures
from tests.fault.fault_kinds import Active, eligible, heal_order
from tests.fault.queue_history import QueueHistory
from tests.fault.replica_checks import compare_epoch_caches, epoch_ranges

ZK = ["zk1", "zk2", "zk3"]
PARTS = {0: ["b0", "b1", "b2"], 1: ["b1", "b2", "b0"]}


def _cut(a: list[str], b: list[str], **kw: set[str]) -> Active:
    blocked = {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}
    return Active("t", "", lambda: None, 1.0, blocked, kw.get("down", set()),
                  kw.get("disk_off", set()))


def test_no_fault_every_partition_must_stay_writable() -> None:
    assert eligible(PARTS, ZK, []) == {0, 1}


def test_one_broker_cut_off_leaves_a_connected_majority() -> None:
    assert eligible(PARTS, ZK, [_cut(["b0"], ["b1", "b2", *ZK])]) == {0, 1}


def test_two_brokers_down_leave_no_majority() -> None:
    assert eligible(PARTS, ZK, [_cut([], [], down={"b0", "b1"})]) == set()


def test_zookeeper_without_quorum_excuses_every_partition() -> None:
    assert eligible(PARTS, ZK, [_cut([], [], down={"zk1", "zk2"})]) == set()
    assert eligible(PARTS, ZK, [_cut([], [], down={"zk1"})]) == {0, 1}
    assert eligible(PARTS, ZK, [_cut(["zk1"], ["zk2", "zk3"]),
                                _cut(["zk2"], ["zk3"])]) == set()


def test_majority_side_without_zookeeper_is_excused() -> None:
    # b1, b2 together but cut from ZooKeeper; b0 alone with it
    assert eligible(PARTS, ZK, [_cut(["b1", "b2"], ["b0", *ZK])]) == set()


def test_one_way_drop_breaks_the_pair() -> None:
    one_way = Active("one-way", "", lambda: None, 1.0, {("b1", "b2")})
    assert eligible({0: ["b1", "b2"]}, ZK, [one_way]) == set()
    assert eligible({0: ["b1", "b2", "b0"]}, ZK, [one_way]) == {0}


def test_offline_disk_and_client_cut_count_as_lost_replicas() -> None:
    assert eligible(PARTS, ZK, [_cut([], [], disk_off={"b0"}),
                                _cut(["b1"], ["client"])]) == set()


def test_epoch_ranges_drop_empty_and_later_entries() -> None:
    assert epoch_ranges([(1, 0), (2, 10), (3, 10), (4, 20), (5, 40)], 30) == [
        (1, 0), (3, 10), (4, 20)]


def test_epoch_caches_agree_below_the_hw_only() -> None:
    leader = [(0, 0), (2, 50), (3, 50), (4, 90)]
    follower = [(0, 0), (3, 50), (5, 95)]
    assert compare_epoch_caches({0: leader, 1: follower}, 90) == []
    assert compare_epoch_caches({0: leader, 1: follower}, 91)      # 90 is epoch 4 vs 3
    assert compare_epoch_caches({0: [(0, 0), (3, 40)], 1: [(0, 0), (3, 50)]}, 60)
    assert compare_epoch_caches({0: [(3, 0), (2, 10)]}, 20)          # epochs must grow


def test_ack_times_first_write_sent_after_a_moment() -> None:
    clock = iter(float(t) for t in range(100))
    h = QueueHistory(clock=lambda: next(clock))
    a = h.send_invoked("p", 0, 1)          # t0
    b = h.send_invoked("p", 0, 2)          # t1
    h.send_ok(a, 0)                        # t2
    c = h.send_invoked("p", 1, 3)          # t3
    h.send_ok(b, 1)                        # t4
    h.send_failed(c, "X")                  # t5
    d = h.send_invoked("p", 1, 4)          # t6
    h.send_ok(d, 0)                        # t7
    acks = AckTimes(h)
    assert acks.first_ack(0, 0.0) == 2.0
    assert acks.first_ack(0, 1.0) == 4.0   # the send invoked at t1
    assert acks.first_ack(0, 2.0) is None
    assert acks.first_ack(1, 3.0) == 7.0   # the failed one does not count
    assert acks.wait_all([0, 1], 1.0, 0.0) == {0: 3.0, 1: 6.0}


def test_figures_count_misses_against_the_targets() -> None:
    f = Figures(from_fault_target=9.0)
    f.add("kill-9", 0, {0: 5.0, 1: None}, {0}, 10.0, {0: 1.0, 1: 2.0})
    assert f.misses == []
    f.add("kill-9", 1, {0: 12.0, 1: 1.0}, {0, 1}, 15.0, {0: 1.0, 1: 7.0})
    assert len(f.misses) == 2
    f.add("halves", 2, {0: None}, {0}, 4.0, {0: 1.0})       # held less than the target
    assert len(f.misses) == 2
    assert "kill-9" in f.table() and "halves" in f.table()


def test_processes_are_healed_after_the_network_and_zookeeper() -> None:
    def a(kind: str) -> Active:
        return Active(kind, "", lambda: None, 1.0)
    order = heal_order([a("kill-9"), a("zk-pause-long"), a("one-way")])
    assert [x.kind for x in order] == ["one-way", "zk-pause-long", "kill-9"]
