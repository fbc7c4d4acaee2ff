"""The fault checker itself, on synthetic histories: it must flag loss, duplication,
reordering, moved and vanished records, HW regressions, HW above an ISR member's LEO,
and replica logs that differ below the HW; and it must pass a clean history."""

from __future__ import annotations

import os
from pathlib import Path

from protocol import records
from storage import filenames
from tests.fault.checker import (DiskBatch, History, InvariantMonitor, Sample, check,
                                 compare_replica_logs, make_value, parse_value,
                                 read_checkpoint, read_partition_dir, records_of)


def clean_run(n: int = 20, parts: int = 2) -> tuple[History, dict[int, list[tuple[int, bytes | None]]]]:
    """n records per partition from producer "a", all acknowledged and all read back."""
    h = History()
    final: dict[int, list[tuple[int, bytes | None]]] = {}
    for p in range(parts):
        final[p] = []
        for seq in range(n):
            v = make_value("a", p, seq, 64)
            h.on_send()
            h.on_ack(v, p, seq)
            final[p].append((seq, v))
    return h, final


def test_value_round_trip() -> None:
    v = make_value("prod-1", 7, 42, 100)
    assert len(v) == 100
    assert parse_value(v) == ("prod-1", 7, 42)
    assert parse_value(b"garbage") is None
    assert parse_value(None) is None


def test_clean_history_passes() -> None:
    h, final = clean_run()
    rep = check(h, final)
    assert rep.ok, rep.summary()
    assert rep.acked == 40 and rep.read == 40


def test_unacknowledged_records_may_be_missing_or_present() -> None:
    h, final = clean_run()
    h.on_error(make_value("a", 0, 20, 64), "timed out")            # never written: fine
    final[1].append((20, make_value("a", 1, 20, 64)))              # written, never acked: fine
    assert check(h, final).ok


def test_an_acknowledgement_without_an_offset_needs_the_record_only() -> None:
    """librdkafka may acknowledge without an offset (None): present anywhere is fine,
    absent is loss; such acks sort beside the others (once a TypeError)."""
    h, final = clean_run()
    v = make_value("a", 0, 20, 64)
    h.on_send()
    h.on_ack(v, 0, None)
    final[0].append((20, v))
    assert check(h, final).ok
    del final[0][-1]
    rep = check(h, final)
    assert len(rep.lost) == 1 and "p0@None" in rep.lost[0]


def test_loss_is_flagged() -> None:
    h, final = clean_run()
    del final[0][5]
    rep = check(h, final)
    assert not rep.ok and len(rep.lost) == 1 and "p0@5" in rep.lost[0]
    assert rep.lost_values == [make_value("a", 0, 5, 64)]


def test_truncated_tail_is_loss() -> None:
    h, final = clean_run()
    final[1] = final[1][:10]
    rep = check(h, final)
    assert len(rep.lost) == 10


def test_duplicate_is_flagged() -> None:
    h, final = clean_run()
    final[0].append((20, make_value("a", 0, 3, 64)))
    rep = check(h, final)
    assert rep.duplicated and not rep.lost
    assert rep.reordered   # seq 3 after seq 19 is also out of order


def test_reordering_is_flagged() -> None:
    h, final = clean_run()
    a, b = final[0][4], final[0][5]
    final[0][4], final[0][5] = (a[0], b[1]), (b[0], a[1])          # values swapped
    rep = check(h, final)
    assert rep.reordered and rep.moved and not rep.lost


def test_two_producers_interleave_freely() -> None:
    h = History()
    final: dict[int, list[tuple[int, bytes | None]]] = {0: []}
    for i in range(10):
        for tag in ("x", "y"):
            off = len(final[0])
            v = make_value(tag, 0, i)
            h.on_ack(v, 0, off)
            final[0].append((off, v))
    assert check(h, final).ok


def test_record_in_wrong_partition_or_garbage_is_foreign() -> None:
    h, final = clean_run()
    final[0].append((20, make_value("a", 1, 99)))
    final[1].append((20, b"not ours"))
    rep = check(h, final)
    assert len(rep.foreign) == 2


def test_seen_record_that_disappears_or_changes_is_flagged() -> None:
    h, final = clean_run()
    extra = make_value("a", 0, 20, 64)                      # read by a consumer, never acked
    h.on_seen(0, 20, extra)
    h.on_seen(0, 3, make_value("a", 0, 3, 64))
    rep = check(h, final)
    assert len(rep.vanished) == 1 and "p0@20" in rep.vanished[0]
    h.on_seen(0, 3, make_value("z", 0, 3))                  # same offset, different value
    assert len(check(h, final).vanished) == 2      # the change itself is one more


def test_monitor_flags_hw_backwards_and_hw_above_isr_leo() -> None:
    m = InvariantMonitor()
    m.observe(Sample(0, leader=1, leader_epoch=0, isr=(1, 2, 3), hw=10, leos={1: 12, 2: 10, 3: 11}))
    m.observe(Sample(0, leader=2, leader_epoch=1, isr=(2, 3), hw=10, leos={2: 10, 3: 11}))
    assert m.violations == []
    m.observe(Sample(0, leader=2, leader_epoch=1, isr=(2, 3), hw=9, leos={2: 10, 3: 11}))
    assert len(m.violations) == 1 and "backwards" in m.violations[0]
    m.observe(Sample(0, leader=2, leader_epoch=1, isr=(2, 3), hw=12, leos={2: 12, 3: 11}))
    assert len(m.violations) == 2 and "LEO 11 of ISR member 3" in m.violations[1]
    m.observe(Sample(0, leader=2, leader_epoch=1, isr=(2,), hw=13, leos={2: 13, 3: 11}))
    assert len(m.violations) == 2      # 3 is out of the ISR: its LEO may lag
    m.check_final(0, 12)
    assert len(m.violations) == 3


def batch(base: int, values: list[bytes], epoch: int = 0) -> bytes:
    return bytes(records.build_batch([(None, v, 1000 + i) for i, v in enumerate(values)],
                                     base_offset=base, partition_leader_epoch=epoch))


def write_segments(d: Path, segments: dict[int, list[bytes]]) -> str:
    d.mkdir(parents=True, exist_ok=True)
    for base, batches in segments.items():
        with open(filenames.log_file(str(d), base), "wb") as f:
            f.write(b"".join(batches))
    return str(d)


def test_replica_logs_compared_batch_by_batch(tmp_path: Path) -> None:
    b = [batch(i * 2, [make_value("a", 0, i * 2), make_value("a", 0, i * 2 + 1)]) for i in range(4)]
    leader = write_segments(tmp_path / "r1", {0: b[:2], 4: b[2:]})
    same_other_rolls = write_segments(tmp_path / "r2", {0: b[:3], 6: b[3:] + [b"\0" * 30]})
    assert [x.base_offset for x in read_partition_dir(leader)] == [0, 2, 4, 6]
    reps = {1: read_partition_dir(leader), 2: read_partition_dir(same_other_rolls)}
    assert compare_replica_logs(reps, hw=8) == []
    assert [v for _, v in records_of(reps[1], 8)] == [make_value("a", 0, i) for i in range(8)]

    flipped = bytearray(b[1])
    flipped[-1] ^= 1
    reps[3] = read_partition_dir(write_segments(tmp_path / "r3", {0: [b[0], bytes(flipped)] + b[2:]}))
    problems = compare_replica_logs(reps, hw=8)
    assert len(problems) == 1 and "replica 3 diverges" in problems[0] and "bytes differ" in problems[0]
    assert compare_replica_logs(reps, hw=2) == []       # the difference is above this HW

    reps[4] = read_partition_dir(write_segments(tmp_path / "r4", {0: b[:2]}))
    del reps[3]
    problems = compare_replica_logs(reps, hw=8)
    assert len(problems) == 1 and "replica 4: holds offsets below 4 only" in problems[0]
    assert any("straddles" in p for p in compare_replica_logs(reps, hw=3))


def test_divergent_epoch_tail_is_flagged(tmp_path: Path) -> None:
    """KIP-101's divergence: same offsets, different leader epochs/values."""
    common = batch(0, [make_value("a", 0, 0)])
    one = read_partition_dir(write_segments(tmp_path / "x", {0: [common, batch(1, [make_value("a", 0, 1)], 0)]}))
    two = read_partition_dir(write_segments(tmp_path / "y", {0: [common, batch(1, [make_value("b", 0, 0)], 1)]}))
    assert compare_replica_logs({1: one, 2: two}, hw=1) == []
    assert "diverges" in compare_replica_logs({1: one, 2: two}, hw=2)[0]


def test_checkpoint_file(tmp_path: Path) -> None:
    path = os.path.join(tmp_path, filenames.REPLICATION_CHECKPOINT)
    with open(path, "w") as f:
        f.write("0\n2\nt 0 15\nt-x 3 7\n")
    assert read_checkpoint(path) == {("t", 0): 15, ("t-x", 3): 7}
    assert read_checkpoint(os.path.join(tmp_path, "absent")) == {}
    assert DiskBatch(0, 0, 0, b"").last_offset == 0


def test_leo_reader_ignores_half_written_and_unpatched_batches(tmp_path: Path) -> None:
    """The monitor reads LEOs from live, mmap'd segments: a batch copied in but not yet
    given its offset, or half copied, must not count (nor move the LEO backwards)."""
    from tests.fault.cluster_faults import LeoReader

    b = [batch(i * 2, [make_value("a", 0, i * 2), make_value("a", 0, i * 2 + 1)]) for i in range(4)]
    d = tmp_path / "t-0"
    path = filenames.log_file(write_segments(d, {0: b[:2]}), 0)
    r = LeoReader()
    assert r.leo(str(d)) == 4
    with open(path, "wb") as f:      # next batch still carries the producer's base offset 0
        f.write(b[0] + b[1] + batch(0, [b"x"]) + b"\0" * 300)
    assert r.leo(str(d)) == 4
    with open(path, "wb") as f:      # patched
        f.write(b[0] + b[1] + batch(4, [b"x"]) + b"\0" * 300)
    assert r.leo(str(d)) == 5
    torn = batch(5, [b"y"])
    with open(path, "wb") as f:      # half copied: the CRC does not hold yet
        f.write(b[0] + b[1] + batch(4, [b"x"]) + torn[:-3] + b"\0" * 303)
    assert r.leo(str(d)) == 5
    with open(path, "wb") as f:      # truncated below what was cached, new data after
        f.write(b[0] + batch(2, [b"z"], 1) + b"\0" * 300)
    assert r.leo(str(d)) == 3
    write_segments(d, {6: [b[3]]})   # a newer segment
    assert r.leo(str(d)) == 8
