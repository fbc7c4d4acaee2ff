"""What every stock-client scenario shares: the records to write, how to check
what came back, and the `pybroker topics` / wire helpers for clients without an
admin API.

The scenario (issue 3): create a topic, produce records with keys, headers and
explicit timestamps with every compression the client supports, read it all
back by partition assignment (no consumer group) in order, list offsets by
timestamp, delete the topic.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

from tests.integration.cluster import REPO, WireClient

PARTITIONS = 3
PER_CODEC = 12                      # records per compression codec
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BASE_TS = 1_700_000_000_000         # explicit CreateTime base (ms); record i: BASE_TS + i*1000


@dataclass(frozen=True)
class Rec:
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    offset: int = -1


def planned_records(codec: str, start: int) -> list[Rec]:
    """PER_CODEC records spread over the partitions; record ``start + i`` gets
    timestamp BASE_TS + (start + i) * 1000 so timestamps grow with production
    order in every partition. One record in each codec has a null key, one has
    no headers, one has a repeated header key and an empty value."""
    out = []
    for i in range(PER_CODEC):
        n = start + i
        key = None if i == 3 else f"key-{codec}-{i}".encode()
        headers: tuple[tuple[str, bytes], ...] = (("codec", codec.encode()), ("seq", str(n).encode()))
        if i == 5:
            headers = ()
        if i == 7:
            headers = (("dup", b"a"), ("dup", b"b"))
        value = b"" if i == 7 else f"value-{codec}-{i}-".encode() * (1 + i % 4)
        out.append(Rec(n % PARTITIONS, key, value, headers, BASE_TS + n * 1000))
    return out


def all_planned(codecs: tuple[str, ...] = CODECS) -> dict[str, list[Rec]]:
    return {c: planned_records(c, k * PER_CODEC) for k, c in enumerate(codecs)}


def check_read_back(produced: list[Rec], consumed: list[Rec], *,
                    check_timestamps: bool = True) -> None:
    """``produced`` carries the offsets the producer was told; ``consumed`` what
    came back. Per partition: same records, same order, offsets dense from 0."""
    for p in range(PARTITIONS):
        want = sorted((r for r in produced if r.partition == p), key=lambda r: r.offset)
        got = [r for r in consumed if r.partition == p]
        assert [r.offset for r in got] == list(range(len(got))), \
            f"partition {p}: offsets not dense from 0: {[r.offset for r in got]}"
        assert len(got) == len(want), f"partition {p}: produced {len(want)}, read {len(got)}"
        for w, g in zip(want, got):
            assert g.offset == w.offset, f"partition {p}: {g} vs produced {w}"
            assert (g.key, g.value) == (w.key, w.value), f"partition {p} offset {g.offset}: {g} != {w}"
            assert list(g.headers) == list(w.headers), f"partition {p} offset {g.offset} headers: {g.headers} != {w.headers}"
            if check_timestamps:
                assert g.timestamp == w.timestamp, f"partition {p} offset {g.offset}: ts {g.timestamp} != {w.timestamp}"


def expected_offset_for_time(records: list[Rec], partition: int, ts: int) -> int | None:
    """Kafka's ListOffsets by timestamp: the first offset whose timestamp >= ts
    (None when there is none: the broker answers offset -1)."""
    for r in sorted((r for r in records if r.partition == partition), key=lambda r: r.offset):
        if r.timestamp >= ts:
            return r.offset
    return None


def timestamp_probes(records: list[Rec]) -> list[tuple[int, int, int | None]]:
    """(partition, timestamp, expected offset) probes: exact hits, in-between
    values, before the first and after the last record."""
    probes = []
    for p in range(PARTITIONS):
        rs = [r for r in records if r.partition == p]
        for ts in (BASE_TS - 5000, rs[0].timestamp, rs[len(rs) // 2].timestamp + 1,
                   rs[-1].timestamp, rs[-1].timestamp + 1):
            probes.append((p, ts, expected_offset_for_time(records, p, ts)))
    return probes


# --------------------------------------------------------------------------------------
# Topics without an admin API, and waiting on metadata


def pybroker_topics(bootstrap: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``pybroker topics --bootstrap-server <bootstrap> <args>``."""
    cmd = [sys.executable, "-m", "broker.cli", "topics", "--bootstrap-server", bootstrap, *args]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
    if check:
        assert res.returncode == 0, f"{' '.join(cmd)} -> {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def topic_state(port: int, topic: str) -> tuple[int, dict[int, int]]:
    """(topic error code, {partition: leader}) from Metadata v1."""
    with WireClient(port) as c:
        md = c.metadata([topic])
    t = next(t for t in md.topics if t.name == topic)
    return t.error_code, {p.partition_index: p.leader_id for p in t.partitions}


def wait_topic_ready(port: int, topic: str, partitions: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    state: tuple[int, dict[int, int]] = (-1, {})
    while time.monotonic() < deadline:
        state = topic_state(port, topic)
        err, leaders = state
        if err == 0 and len(leaders) == partitions and all(l >= 0 for l in leaders.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} not ready with {partitions} led partitions: {state}")


def wait_topic_gone(port: int, topic: str, timeout: float = 20.0) -> None:
    """Metadata answers UNKNOWN_TOPIC_OR_PARTITION (3) for it."""
    deadline = time.monotonic() + timeout
    state: tuple[int, dict[int, int]] = (-1, {})
    while time.monotonic() < deadline:
        state = topic_state(port, topic)
        if state[0] == 3:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} still there after delete: {state}")
