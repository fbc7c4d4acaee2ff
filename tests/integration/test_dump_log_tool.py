"""``pybroker dump-log`` on the files of a real broker (real ZooKeeper), written by
confluent-kafka: keyed records with headers, a gzip producer, a transactional producer
with one committed and one aborted transaction (so control batches and a .txnindex
exist), and a group's offset commit. After a clean shutdown the segment is dumped with
--deep-iteration --print-data-log and every produced offset, key, payload and header
key is found in it; the .index and .timeindex entries point at batches; the index
sanity check passes and fails on a corrupted copy; __consumer_offsets and
__transaction_state decode."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tools import dump_log
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.multi import SINGLE_BROKER_TXN_OVERRIDES, create_topic

pytestmark = pytest.mark.integration

SEG = "00000000000000000000"
OVERRIDES = {**SINGLE_BROKER_TXN_OVERRIDES, "offsets.topic.num.partitions": "1",
             "transaction.state.log.num.partitions": "1"}
BATCH_RE = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*producerId: (-?\d+) "
                      r".*isTransactional: (\w+) isControl: (\w+) .*position: (\d+) .*"
                      r"compresscodec: (\w+) crc: \d+ isvalid: (\w+)$")
RECORD_RE = re.compile(r"^\| offset: (\d+) CreateTime: \d+ keySize: -?\d+ valueSize: -?\d+ "
                       r"sequence: -?\d+ headerKeys: \[([^\]]*)\](.*)$")


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("dump-log", overrides=OVERRIDES)


def tool(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dump_log.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


Produced = dict[int, tuple[str | None, str | None, str]]   # offset -> key, value, header keys


def produce(cluster: Cluster, topic: str, config: dict[str, object], n: int, tag: str,
            transactions: tuple[bool, ...] = (),
            after_commit: Callable[[], None] | None = None) -> tuple[Produced, Produced]:
    """n records per run (one run, or one per transaction: True commit, False abort);
    -> (offsets kept, offsets of aborted records) with what each holds."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, **config})
    kept: Produced = {}
    aborted: Produced = {}
    sink: Produced = {}
    header_keys: dict[str, str] = {}        # key -> its header keys (a delivery report has none)

    def delivered(err: object, msg: object) -> None:
        assert err is None, err
        key = msg.key().decode()                                        # type: ignore[attr-defined]
        sink[msg.offset()] = (key, msg.value().decode(), header_keys[key])  # type: ignore[attr-defined]

    def run(label: str) -> None:
        for i in range(n):
            headers = [("h1", b"x"), ("h-two", b"y")] if i % 2 else []
            header_keys[f"{label}-k{i}"] = ",".join(k for k, _ in headers)
            p.produce(topic, key=f"{label}-k{i}", value=f"{label}-v{i}", headers=headers,
                      on_delivery=delivered)
        assert p.flush(30) == 0

    if not transactions:
        run(tag)
        kept.update(sink)
        return kept, aborted
    p.init_transactions(30)
    for i, commit in enumerate(transactions):
        sink.clear()
        p.begin_transaction()
        run(f"{tag}{i}")
        if commit:
            p.commit_transaction(30)
            kept.update(sink)
            if after_commit is not None:
                after_commit()
        else:
            p.abort_transaction(30)
            aborted.update(sink)
    return kept, aborted


def commit_offset(cluster: Cluster, topic: str, group: str, offset: int) -> None:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def test_dump_log_matches_what_the_clients_wrote(cluster: Cluster, tmp_path: Path) -> None:
    topic, group = f"dl-{uuid.uuid4().hex[:6]}", f"dl-g-{uuid.uuid4().hex[:6]}"
    broker = cluster.brokers[0]
    assert create_topic(broker.port, topic, 1, 1, {"index.interval.bytes": "150"}) == 0
    plain, _ = produce(cluster, topic, {"acks": "all"}, 30, "p")
    zipped, _ = produce(cluster, topic, {"compression.type": "gzip"}, 20, "z")
    txn_log = broker.log_dir / "__transaction_state-0" / f"{SEG}.log"

    def complete_commit_written() -> None:
        """The coordinator writes CompleteCommit once the id stays idle a moment (the
        next transaction's Ongoing would supersede it): wait for it, so that the
        log holds every state for the decoder below."""
        deadline = time.monotonic() + 10
        while f"transactionalId=dl-txn-{topic} " not in (
                out := tool("--transaction-log-decoder", "--files", str(txn_log))[1]) \
                or "state=CompleteCommit," not in out:
            assert time.monotonic() < deadline, "no CompleteCommit record in 10 s"
            time.sleep(0.05)
    committed, aborted = produce(cluster, topic, {"transactional.id": f"dl-txn-{topic}"}, 5,
                                 "t", transactions=(True, False),
                                 after_commit=complete_commit_written)
    commit_offset(cluster, topic, group, 17)
    broker.stop()                                   # clean: indexes trimmed, snapshot written
    part = broker.log_dir / f"{topic}-0"
    everything = {**plain, **zipped, **committed, **aborted}
    assert len(everything) == 30 + 20 + 10

    # the segment, through the front door, deep and with contents
    log_path = part / f"{SEG}.log"
    run = subprocess.run([sys.executable, "-m", "broker.cli", "dump-log", "--files",
                          str(log_path), "--deep-iteration", "--print-data-log"],
                         capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0 and run.stderr == "", run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == [f"Dumping {log_path}", "Log starting offset: 0"]
    batches = [m for m in map(BATCH_RE.match, lines) if m]
    recs = [m for m in map(RECORD_RE.match, lines) if m]
    assert len(batches) + len(recs) == len(lines) - 2          # nothing else printed
    assert all(m[9] == "true" for m in batches)
    assert sum(int(m[3]) for m in batches) == len(recs) == len(everything) + 2
    by_offset = {int(m[1]): (m[2], m[3]) for m in recs}
    assert sorted(by_offset) == list(range(len(recs)))         # every offset, once, in order
    for offset, (key, value, header_keys) in everything.items():
        assert by_offset[offset] == (header_keys, f" key: {key} payload: {value}"), offset
    markers = {o: text for o, (_h, text) in by_offset.items() if o not in everything}
    assert sorted(t.split(" coordinatorEpoch")[0] for t in markers.values()) == [
        " endTxnMarker: ABORT", " endTxnMarker: COMMIT"]
    controls = [m for m in batches if m[6] == "true"]
    assert len(controls) == 2 and all(m[5] == "true" for m in controls)
    gzip_offsets = {o for m in batches if m[8] == "gzip"
                    for o in range(int(m[1]), int(m[2]) + 1)}
    assert gzip_offsets == set(zipped)
    txn_pid = {m[4] for m in batches if m[5] == "true"}
    assert len(txn_pid) == 1
    abort_offset = next(o for o, t in markers.items() if "ABORT" in t)

    # the indexes point at batch starts
    starts = {int(m[7]): (int(m[1]), int(m[2])) for m in batches}
    code, out, err = tool("--files", str(part / f"{SEG}.index"))
    assert code == 0 and err == ""
    entries = [tuple(map(int, re.findall(r"\d+", ln))) for ln in out.splitlines()[1:]]
    assert len(entries) >= 3
    for offset, position in entries:
        assert position in starts and starts[position][0] <= offset == starts[position][1]
    code, out, err = tool("--files", str(part / f"{SEG}.timeindex"))
    assert code == 0 and err == ""
    time_entries = [tuple(map(int, re.findall(r"\d+", ln))) for ln in out.splitlines()[1:]]
    last_offsets = {last for _base, last in starts.values()}
    assert time_entries and all(offset in last_offsets for _ts, offset in time_entries)
    assert [ts for ts, _ in time_entries] == sorted({ts for ts, _ in time_entries})

    # the txn index holds the aborted transaction; the snapshot both producers
    code, out, _ = tool("--files", f"{part / (SEG + '.txnindex')}")
    assert code == 0
    txn_lines = out.splitlines()[1:]
    assert len(txn_lines) == 1
    assert f"producerId: {txn_pid.pop()} firstOffset: {min(aborted)} " \
           f"lastOffset: {abort_offset} " in txn_lines[0]
    snapshot = sorted(part.glob("*.snapshot"))[-1]
    code, out, _ = tool("--files", str(snapshot))
    assert code == 0 and len(out.splitlines()) >= 2 and "producerId: " in out

    # sanity check: the broker's index passes, a corrupted copy does not
    code, out, _ = tool("--index-sanity-check", "--files", str(part / f"{SEG}.index"))
    assert code == 0 and out.splitlines()[-1].endswith("passed sanity check.")
    copy = tmp_path / f"{topic}-0"
    copy.mkdir()
    for suffix in (".log", ".index"):
        shutil.copy(part / f"{SEG}{suffix}", copy / f"{SEG}{suffix}")
    corrupt = copy / f"{SEG}.index"
    data = bytearray(corrupt.read_bytes())
    data[-4:] = (1 << 30).to_bytes(4, "big")            # last entry's position beyond the log
    corrupt.write_bytes(bytes(data))
    code, out, err = tool("--index-sanity-check", "--files", str(corrupt))
    assert code == 1 and "passed" not in out and str(corrupt) in err
    code, _, err = tool("--verify-index-only", "--files", str(corrupt))
    assert f"Mismatches in :{corrupt.resolve()}" in err

    # the group's commit in __consumer_offsets, and the transactions' states
    offsets_log = broker.log_dir / "__consumer_offsets-0" / f"{SEG}.log"
    code, out, err = tool("--offsets-decoder", "--files", str(offsets_log))
    assert code == 0, err
    key = f'key: {{"type":"1","data":{{"group":"{group}","topic":"{topic}","partition":0}}}}'
    line = next(ln for ln in out.splitlines() if key in ln)
    assert ' payload: {"version":"3","data":{"offset":17,' in line
    code, out, err = tool("--transaction-log-decoder", "--files", str(txn_log))
    assert code == 0, err
    states = re.findall(r"key: transaction_metadata::transactionalId=dl-txn-\S+ "
                        r"payload: producerId:\d+,producerEpoch:\d+,state=(\w+),", out)
    for state in ("Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort",
                  "CompleteAbort"):
        assert state in states, (state, states)
