"""Offset and time indexes against a sorted-list oracle."""

from __future__ import annotations

import bisect
import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.mmap_index import CorruptIndexError
from storage.offset_index import OffsetIndex
from storage.time_index import TimeIndex

BASE = 1_000


def _floor(keys: list[int], target: int) -> int:
    """Oracle: slot of the largest key <= target, -1 if none."""
    return bisect.bisect_right(keys, target) - 1


@settings(max_examples=80, deadline=None)
@given(st.sets(st.integers(0, 5000), max_size=60), st.lists(st.integers(-10, 5100), max_size=30),
       st.integers(0, 5100))
def test_offset_index_lookup_matches_sorted_oracle(rels: set[int], targets: list[int], cut: int) -> None:
    keys = sorted(rels)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.index")
        index = OffsetIndex(path, BASE, 8 * 100, writable=True)
        for i, rel in enumerate(keys):
            index.append(BASE + rel, i * 10)
        for target in targets:
            slot = _floor(keys, target)
            want = (BASE, 0) if slot < 0 else (BASE + keys[slot], slot * 10)
            assert index.lookup(BASE + target) == want
        index.truncate_to(BASE + cut)
        keys = [k for k in keys if k < cut]
        assert index.entries == len(keys)
        index.trim()
        assert os.path.getsize(path) == 8 * len(keys)
        reopened = OffsetIndex(path, BASE, 8 * 100, writable=False)
        reopened.sanity_check(log_size=10 * len(keys) + 1)
        for target in targets:
            slot = _floor(keys, target)
            assert reopened.lookup(BASE + target) == ((BASE, 0) if slot < 0 else (BASE + keys[slot], slot * 10))
        reopened.close()


def test_offset_index_rules(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "y.index")
    index = OffsetIndex(path, BASE, 8 * 3, writable=True)
    assert index.lookup(BASE + 50) == (BASE, 0)  # empty: start of segment
    index.append(BASE + 5, 100)
    with pytest.raises(ValueError):
        index.append(BASE + 5, 200)  # offsets must increase
    index.append(BASE + 6, 200)
    index.append(BASE + 9, 300)
    assert index.is_full
    with pytest.raises(ValueError):
        index.append(BASE + 10, 400)
    assert os.path.getsize(path) == 24  # preallocated
    index.close()
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")  # not a whole entry
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, BASE, 8 * 3, writable=False).sanity_check(10_000)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 40)), max_size=40),
       st.lists(st.integers(-5, 1500), max_size=20))
def test_time_index_lookup_below(steps: list[tuple[int, int]], targets: list[int]) -> None:
    with tempfile.TemporaryDirectory() as d:
        index = TimeIndex(os.path.join(d, "x.timeindex"), BASE, 12 * 200, writable=True)
        entries: list[tuple[int, int]] = []
        ts, off = 0, 0
        for dts, doff in steps:
            ts, off = ts + dts, off + doff
            if index.maybe_append(ts, BASE + off):
                entries.append((ts, BASE + off))
        # only strictly growing timestamps are kept
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(entries, entries[1:]))
        for target in targets:
            below = [e for e in entries if e[0] < target]
            assert index.lookup_below(target) == (below[-1] if below else (-1, BASE))
        index.close()


def test_the_first_entry_on_each_page_is_written_with_pwrite(tmp_path: object,
                                                               monkeypatch: object) -> None:
    """A write fault on a hole page of the mapping is slow (milliseconds, tens under
    load): the first entry of each page goes by pwrite, the rest through the map,
    and lookups read both the same way. 4096-byte pages hold 512 offset entries and
    341 1/3 time entries (an entry may straddle two pages)."""
    import mmap
    pwrites: list[int] = []
    real_pwrite = os.pwrite

    def pwrite(fd: int, data: bytes, pos: int) -> int:
        pwrites.append(pos)
        return real_pwrite(fd, data, pos)
    monkeypatch.setattr(os, "pwrite", pwrite)  # type: ignore[attr-defined]
    page = mmap.PAGESIZE
    offsets = OffsetIndex(os.path.join(str(tmp_path), "p.index"), BASE, 8 * 2000, writable=True)
    for i in range(1200):
        offsets.append(BASE + i, 10 * i)
    assert pwrites == [0, page, 2 * page]
    assert [offsets.lookup(BASE + i) for i in (0, 511, 512, 1199)] == [
        (BASE, 0), (BASE + 511, 5110), (BASE + 512, 5120), (BASE + 1199, 11990)]
    pwrites.clear()
    times = TimeIndex(os.path.join(str(tmp_path), "p.timeindex"), BASE, 12 * 1000, writable=True)
    for i in range(700):
        times.maybe_append(1000 + i, BASE + i)
    # entries at 0, 4092 (straddles pages 0 and 1: page 1 now backed), 8184 (straddles 1|2)
    assert pwrites == [0, 341 * 12, 682 * 12]
    assert [times.lookup_below(1000 + i) for i in (341, 342, 700)] == [
        (1000 + 340, BASE + 340), (1000 + 341, BASE + 341), (1000 + 699, BASE + 699)]
    offsets.close()
    times.close()
    assert OffsetIndex(offsets.path, BASE, 8 * 2000, writable=False).lookup(BASE + 600) == (
        BASE + 600, 6000)
