"""The transactional campaign's checker on hand-made histories: a clean run passes and
each anomaly (lost, duplicate, foreign, G1a, uncommitted read, phantom read) is
reported, and only it."""

from __future__ import annotations

from tests.fault.txn_checker import Rec, TxnHistory, check, out_value, parse_out


def clean() -> tuple[TxnHistory, list[Rec], list[Rec]]:
    """Two transactions committed (t1: in-0, in-1; t3: in-2) and one aborted (t2: in-2,
    redone in t3); the observer read t1's records after t1's commit was asked for."""
    h = TxnHistory([b"in-0", b"in-1", b"in-2"], commit_called={"t1": 10.0, "t3": 30.0})
    everything = [(0, 0, out_value(b"in-0", "t1")), (0, 1, out_value(b"in-1", "t1")),
                  (0, 3, out_value(b"in-2", "t2")),           # aborted (marker at 2, 4)
                  (0, 5, out_value(b"in-2", "t3"))]
    committed = [everything[0], everything[1], everything[3]]
    h.observed = [(10.5, everything[0]), (11.0, everything[1]), (31.0, everything[3])]
    return h, committed, everything


def test_values_round_trip() -> None:
    assert parse_out(out_value(b"in-7|x", "p-1-2")) == (b"in-7|x", "p-1-2")
    assert parse_out(b"garbage") is None and parse_out(None) is None


def test_a_clean_history_passes() -> None:
    report = check(*clean())
    assert report.ok, report.summary()
    assert (report.committed, report.aborted_records, report.observed) == (3, 1, 3)


def test_a_lost_input_is_reported() -> None:
    h, committed, everything = clean()
    report = check(h, committed[:2], everything)
    assert report.lost == [b"in-2"] and not report.duplicates
    assert report.g1a == [everything[3]]        # it was read, and is not committed now
    assert not report.ok


def test_a_duplicate_is_reported() -> None:
    h, committed, everything = clean()
    again = (1, 0, out_value(b"in-0", "t3"))
    report = check(h, [*committed, again], [*everything, again])
    assert report.duplicates == [b"in-0"] and not report.lost


def test_a_foreign_record_is_reported() -> None:
    h, committed, everything = clean()
    junk, stranger = (1, 0, b"junk"), (1, 1, out_value(b"in-99", "t3"))
    report = check(h, [*committed, junk, stranger], [*everything, junk, stranger])
    assert report.foreign == [junk, stranger]


def test_an_aborted_read_is_g1a() -> None:
    h, committed, everything = clean()
    h.observed.append((20.0, everything[2]))   # the observer read t2's aborted record
    report = check(h, committed, everything)
    assert report.g1a == [everything[2]] and not report.uncommitted


def test_a_read_before_the_commit_was_asked_is_uncommitted() -> None:
    h, committed, everything = clean()
    h.observed[2] = (29.0, everything[3])      # t3 read at 29 s, its commit asked at 30 s
    report = check(h, committed, everything)
    assert report.uncommitted == [everything[3]] and not report.g1a


def test_a_record_no_final_log_holds_is_a_phantom() -> None:
    h, committed, everything = clean()
    gone = (2, 7, out_value(b"in-1", "t1"))
    h.observed.append((12.0, gone))
    report = check(h, committed, everything)
    assert report.phantom == [gone]
