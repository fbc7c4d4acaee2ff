"""kcat 1.7 (librdkafka 2.0.2: the old-tagged-field client): topics through
`pybroker topics`, produce with keys, headers and every codec, metadata listing,
read-back by partition, offsets by timestamp (-Q), delete.

kcat cannot set a per-record timestamp or per-record headers: each
(codec, partition) pair is one ``kcat -P`` run whose headers name both, and the
timestamp probes are built from the timestamps read back.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.integration.clients.common import (CODECS, PARTITIONS, Rec, check_read_back,
                                              pybroker_topics, timestamp_probes,
                                              wait_topic_gone, wait_topic_ready)

pytestmark = pytest.mark.integration

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
if KCAT is None:
    pytest.skip("kcat not installed (make test installs it with apt-get where it can)",
                allow_module_level=True)

PER_RUN = 6


def kcat(*args: str, input: str | None = None) -> str:
    res = subprocess.run([KCAT, *args], input=input, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"kcat {' '.join(args)} -> {res.returncode}\n{res.stderr}"
    assert "ERROR" not in res.stderr and "Delivery failed" not in res.stderr, res.stderr
    return res.stdout


def produce(bootstrap: str, topic: str) -> list[Rec]:
    """-> the records in production order per partition (offsets assigned as
    they must be: dense from 0 in that order, one producer at a time)."""
    planned: list[Rec] = []
    next_offset = [0] * PARTITIONS
    for codec in CODECS:
        for p in range(PARTITIONS):
            headers = (("codec", codec.encode()), ("part", str(p).encode()))
            recs = []
            for i in range(PER_RUN):
                key = f"k-{codec}-{p}-{i}".encode()
                value = (f"v-{codec}-{p}-{i}|" * (1 + i * 7)).encode()
                recs.append(Rec(p, key, value, headers, -1, next_offset[p]))
                next_offset[p] += 1
            lines = "".join(f"{r.key.decode()}\t{r.value.decode()}\n" for r in recs)  # type: ignore[union-attr]
            kcat("-P", "-b", bootstrap, "-t", topic, "-p", str(p), "-z", codec, "-K", "\t",
                 "-H", f"codec={codec}", "-H", f"part={p}", "-X", "linger.ms=5", input=lines)
            planned.extend(recs)
    return planned


def consume(bootstrap: str, topic: str) -> list[Rec]:
    out: list[Rec] = []
    for p in range(PARTITIONS):
        text = kcat("-C", "-b", bootstrap, "-t", topic, "-p", str(p), "-o", "beginning", "-e",
                    "-J", "-q")
        for line in text.splitlines():
            m = json.loads(line)
            h = m.get("headers") or []
            headers = tuple((h[i], h[i + 1].encode()) for i in range(0, len(h), 2))
            out.append(Rec(m["partition"], m["key"].encode() if m["key"] is not None else None,
                           (m["payload"] or "").encode(), headers, m["ts"], m["offset"]))
    return out


def test_kcat_round_trip(bootstrap: str, port: int, topic: str) -> None:
    pybroker_topics(bootstrap, "--create", "--topic", topic, "--partitions", str(PARTITIONS),
                    "--replication-factor", "1")
    wait_topic_ready(port, topic, PARTITIONS)

    listing = kcat("-L", "-b", bootstrap, "-t", topic)
    assert f'topic "{topic}" with {PARTITIONS} partitions' in listing, listing
    for p in range(PARTITIONS):
        assert re.search(rf"partition {p}, leader 0, replicas: 0, isrs: 0", listing), listing

    planned = produce(bootstrap, topic)
    consumed = consume(bootstrap, topic)
    check_read_back(planned, consumed, check_timestamps=False)

    # timestamps are the producer's clock: probe with what came back
    probes = timestamp_probes(consumed)
    for p, ts, want in probes:  # one run per probe: the answer line does not echo ts
        answer = kcat("-Q", "-b", bootstrap, "-t", f"{topic}:{p}:{ts}")
        m = re.search(rf"{re.escape(topic)} \[(\d+)\] offset (-?\d+)", answer)
        assert m and int(m.group(1)) == p, answer
        assert int(m.group(2)) == (-1 if want is None else want), \
            f"kcat -Q -t {topic}:{p}:{ts}: got {m.group(2)}, want {want}"

    pybroker_topics(bootstrap, "--delete", "--topic", topic)
    wait_topic_gone(port, topic)
