"""coordinator.group.committed_offsets: committed offsets by group id, the writes in
flight, open transactions' offsets, expiry and unloading."""

from __future__ import annotations

from coordinator.group.classic.offsets_topic import OffsetAndMetadata
from coordinator.group.committed_offsets import CommittedOffsets


def at(offset: int, committed_ms: int, expire_ms: int = -1) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, commit_timestamp=committed_ms, expire_timestamp=expire_ms)


def test_an_entry_lives_while_it_holds_something() -> None:
    store = CommittedOffsets()
    assert store.get("g") is None and store.committed("g") == {} and not store.has_offsets("g")
    entry = store.of("g")
    assert store.of("g") is entry and "g" in store and not store.has_offsets("g")
    entry.writing.update([("t", 0)])
    store.drop_if_empty("g")
    assert store.get("g") is entry and store.has_offsets("g")       # a write in flight
    entry.writing.subtract([("t", 0)])
    entry.pending_txn[7] = {("t", 0): at(1, 0)}
    store.drop_if_empty("g")
    assert store.get("g") is entry                                  # an open transaction
    assert entry.unstable_partitions() == {("t", 0)}
    entry.pending_txn.clear()
    store.drop_if_empty("g")
    assert store.get("g") is None


def test_expiry_rule() -> None:
    store = CommittedOffsets()
    entry = store.of("g")
    entry.committed.update({("t", 0): at(1, 0), ("t", 1): at(2, 900), ("kept", 0): at(3, 0),
                            ("old-client", 0): at(4, 990, expire_ms=1_500),
                            ("writing", 0): at(5, 0)})
    entry.writing.update([("writing", 0)])
    by_commit = entry.expired(1_000, 500, lambda o: o.commit_timestamp, {"kept"})
    assert sorted(by_commit) == [("t", 0)]
    # an offset's own expire timestamp wins over the group's rule
    assert ("old-client", 0) in entry.expired(1_500, 500, lambda o: 0, set())
    # retention counted from when the group emptied (900): nothing yet at 1,000
    assert entry.expired(1_000, 500, lambda o: 900, set()) == []


def test_unload_forgets_the_partition_s_ids() -> None:
    store = CommittedOffsets()
    for gid in ("a", "b", "c"):
        store.of(gid).committed[("t", 0)] = at(1, 0)
    store.unload(lambda gid: gid in ("a", "c"))
    assert [gid for gid, _ in store.items()] == ["b"]
    for gid, _ in store.items():            # a snapshot: dropping while walking is fine
        store.drop(gid)
    assert store.get("b") is None
