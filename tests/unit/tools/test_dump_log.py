"""``pybroker dump-log`` on segments written by our storage/: the batch, record, index,
time-index, txn-index and snapshot lines in Kafka 3.9's shapes, the checks and their
stderr reports, the decoders (__consumer_offsets and __transaction_state records
written by the broker's own encoders), and bad input."""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
from pathlib import Path

import pytest

from coordinator.group.classic import offsets_topic
from coordinator.transaction import txn_log
from coordinator.transaction.txn_state import TxnMetadata, TxnState
from protocol import records
from storage import producer_snapshot
from storage.config import LogConfig
from storage.log import PartitionLog
from storage.txn_index import AbortedTxn
from tools import dump_log
from tools import dump_log_format as fmt
from tools.dump_log_decoders import offsets_parser, to_json, transaction_log_parser

SEG = "00000000000000000000"
BATCH_RE = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) "
    r"lastSequence: (-?\d+) producerId: (-?\d+) producerEpoch: (-?\d+) "
    r"partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) isControl: (true|false) "
    r"deleteHorizonMs: OptionalLong\.empty position: (\d+) (CreateTime|LogAppendTime): (-?\d+) "
    r"size: (\d+) magic: 2 compresscodec: (\w+) crc: (\d+) isvalid: (true|false)$")
RECORD_RE = re.compile(
    r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) "
    r"sequence: (-?\d+) headerKeys: \[([^\]]*)\](.*)$")


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = dump_log.main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def batch(keys_values: list[tuple[bytes | None, bytes | None]], *, ts: int = 1_000,
          headers: list[tuple[str, bytes | None]] | None = None, **options: object) -> bytearray:
    return records.build_batch([(k, v, ts + i, headers or []) for i, (k, v) in
                                enumerate(keys_values)], **options)  # type: ignore[arg-type]


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    """One segment: plain, keyless, gzip, transactional + abort marker, idempotent; a
    .txnindex entry, a producer snapshot; small index interval so both indexes fill."""
    part = tmp_path / "t-0"
    log = PartitionLog.open(str(part), LogConfig(index_interval_bytes=64))
    log.append(batch([(b"k0", b"v0"), (b"k1", None)], headers=[("a", b"1"), ("b", None)]),
               leader_epoch=2)                                                     # 0-1
    log.append(batch([(None, b"only value")] * 3, ts=2_000), leader_epoch=2)       # 2-4
    log.append(batch([(b"z%d" % i, b"zipped %d" % i) for i in range(4)], ts=3_000,
                     codec=1), leader_epoch=2)                      # 5-8
    log.append(batch([(b"t", b"txn")], ts=4_000, producer_id=9, producer_epoch=1,
                     base_sequence=0, transactional=True), leader_epoch=3)         # 9
    log.append(records.build_control_batch(commit=False, producer_id=9, producer_epoch=1,
                                           coordinator_epoch=5, timestamp=4_001),
               leader_epoch=3)                                                     # 10
    log.append_aborted_txn(AbortedTxn(9, 9, 10, 9))
    log.append(batch([(b"i", b"idem")], ts=5_000, producer_id=11, producer_epoch=0,
                     base_sequence=0x7FFFFFFF), leader_epoch=3)                    # 11
    log.close()
    producer_snapshot.write(str(part), 12, [
        producer_snapshot.SnapshotEntry(11, 0, 0x7FFFFFFF, 11, 0, 5_000),
        producer_snapshot.SnapshotEntry(9, 1, 0, 9, 0, 4_000, 5, 9)])
    return part


def batch_lines(out: str) -> list[re.Match[str]]:
    return [m for m in (BATCH_RE.match(line) for line in out.splitlines()) if m]


def record_lines(out: str) -> list[re.Match[str]]:
    return [m for m in (RECORD_RE.match(line) for line in out.splitlines()) if m]


# -- .log --------------------------------------------------------------------------------

def test_shallow_dump_matches_every_batch_header(segment: Path) -> None:
    log_path = segment / f"{SEG}.log"
    code, out, err = run(["--files", str(log_path)])
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {log_path}", "Log starting offset: 0"]
    data = log_path.read_bytes()
    headers = list(records.iter_batches(data))
    got = batch_lines(out)
    assert len(got) == len(headers) == len(lines) - 2 == 6
    for m, (pos, h) in zip(got, headers):
        assert (int(m[1]), int(m[2]), int(m[3])) == (h.base_offset, h.last_offset, h.records_count)
        assert int(m[11]) == pos and int(m[14]) == h.size and int(m[16]) == h.crc
        assert int(m[13]) == h.max_timestamp and m[17] == "true"
    assert [m[15] for m in got] == ["none", "none", "gzip", "none", "none", "none"]
    assert [(m[9], m[10]) for m in got][3:5] == [("true", "false"), ("true", "true")]
    assert [int(m[8]) for m in got] == [2, 2, 2, 3, 3, 3]
    # sequences wrap at 2^31-1 as Kafka's incrementSequence
    assert (got[3][4], got[3][5], got[3][6], got[3][7]) == ("0", "0", "9", "1")
    assert (got[5][4], got[5][5]) == (str(0x7FFFFFFF), str(0x7FFFFFFF))
    assert not record_lines(out)


def test_deep_iteration_prints_every_record_and_data_log_its_contents(segment: Path) -> None:
    log_path = str(segment / f"{SEG}.log")
    _, deep, _ = run(["--deep-iteration", "--files", log_path])
    recs = record_lines(deep)
    assert [int(m[1]) for m in recs] == list(range(12))
    assert all(m[7] == "" for m in recs if int(m[1]) != 10)      # no contents without the flag
    assert recs[10][7] == " endTxnMarker: ABORT coordinatorEpoch: 5"
    code, out, _ = run(["--print-data-log", "--files", log_path])   # implies deep iteration
    assert code == 0
    recs = record_lines(out)
    assert recs[0][6] == "a,b" and recs[0][7] == " key: k0 payload: v0"
    assert (recs[1][4], recs[1][7]) == ("-1", " key: k1")                # null value: no payload
    assert (recs[2][3], recs[2][7]) == ("-1", " payload: only value")    # null key: no key
    assert [m[7] for m in recs[5:9]] == [f" key: z{i} payload: zipped {i}" for i in range(4)]
    assert recs[10][7] == " endTxnMarker: ABORT coordinatorEpoch: 5"     # control: no contents
    assert (recs[9][5], recs[11][5]) == ("0", str(0x7FFFFFFF))           # record sequences
    assert [int(m[2]) for m in recs[2:5]] == [2_000, 2_001, 2_002]


def test_skip_record_metadata_keeps_kafkas_prefix_quirk(segment: Path) -> None:
    _, out, _ = run(["--print-data-log", "--skip-record-metadata", "--files",
                     str(segment / f"{SEG}.log")])
    lines = [ln for ln in out.splitlines()[2:] if not ln.startswith("baseOffset")]
    assert lines[0] == "| key: k0 payload: v0"
    assert lines[1] == "| key: k1"
    assert lines[2] == " payload: only value"          # no key: Kafka drops the "|" too
    assert lines[10] == ""                              # a control record prints nothing


def test_max_bytes_and_trailing_garbage(segment: Path, tmp_path: Path) -> None:
    log_path = segment / f"{SEG}.log"
    first, second = [h.size for _, h in list(records.iter_batches(log_path.read_bytes()))[:2]]
    _, out, _ = run(["--max-bytes", str(first + second - 1), "--files", str(log_path)])
    assert len(batch_lines(out)) == 1 and "invalid bytes" not in out
    torn = tmp_path / "copy" / f"{SEG}.log"
    torn.parent.mkdir()
    torn.write_bytes(log_path.read_bytes() + b"\x00" * 7)
    code, out, _ = run(["--files", str(torn)])
    assert code == 0 and out.splitlines()[-1] == f"Found 7 invalid bytes at the end of {SEG}.log"


def test_bad_crc_shows_invalid(segment: Path, tmp_path: Path) -> None:
    data = bytearray((segment / f"{SEG}.log").read_bytes())
    data[records.HEADER_SIZE + 5] ^= 0xFF               # inside the first batch's records
    bad = tmp_path / f"{SEG}.log"
    bad.write_bytes(bytes(data))
    _, out, _ = run(["--files", str(bad)])
    assert [m[17] for m in batch_lines(out)] == ["false"] + ["true"] * 5


def test_non_consecutive_offsets_are_reported_newest_first(tmp_path: Path) -> None:
    part = tmp_path / "g-0"
    log = PartitionLog.open(str(part), LogConfig())
    for base in (0, 5, 9):                              # a follower's append keeps offsets
        b = batch([(b"k", b"v")] * 2)
        records.patch_base_offset(b, 0, base)
        log.append(b, assign_offsets=False)
    log.close()
    path = part / f"{SEG}.log"
    code, out, err = run(["--deep-iteration", "--files", str(path)])
    assert code == 0
    assert err.splitlines() == [f"Non-consecutive offsets in {path.resolve()}",
                                "  6 is followed by 9",
                                "  1 is followed by 5"]


# -- indexes -------------------------------------------------------------------------------

def test_offset_index_entries_point_at_their_batches(segment: Path) -> None:
    code, out, err = run(["--files", str(segment / f"{SEG}.index")])
    assert code == 0 and err == ""
    entries = [tuple(map(int, re.findall(r"-?\d+", line))) for line in out.splitlines()[1:]]
    assert entries and all(len(e) == 2 for e in entries)
    starts = {pos: h for pos, h in records.iter_batches((segment / f"{SEG}.log").read_bytes())}
    for offset, position in entries:
        assert position in starts and starts[position].last_offset == offset
    code, out, err = run(["--verify-index-only", "--files", str(segment / f"{SEG}.index")])
    assert (code, out.splitlines()[1:], err) == (0, [], "")


def test_index_mismatch_and_sanity_check_of_a_corrupt_copy(segment: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(segment, copy)
    index = copy / f"{SEG}.index"
    code, out, _ = run(["--index-sanity-check", "--files", str(index)])
    assert code == 0 and out.splitlines()[1] == f"{index} passed sanity check."
    data = bytearray(index.read_bytes())
    rel, _pos = struct.unpack_from(">iI", data, 0)
    struct.pack_into(">iI", data, 0, rel, 0)            # first entry now points at batch 0
    index.write_bytes(bytes(data))
    code, _, err = run(["--verify-index-only", "--files", str(index)])
    assert code == 0
    assert err.splitlines() == [f"Mismatches in :{index.resolve()}",
                                f"  Index offset: {rel}, log offset: 1"]
    struct.pack_into(">iI", data, len(data) - 8, rel, 1 << 30)   # last position past the log
    index.write_bytes(bytes(data) + b"\x00\x01")        # and a torn entry
    code, out, err = run(["--index-sanity-check", "--files", str(index)])
    assert code == 1 and "passed" not in out
    assert str(index) in err and "length" in err


def test_time_index_entries_and_a_tampered_timestamp(segment: Path, tmp_path: Path) -> None:
    path = segment / f"{SEG}.timeindex"
    code, out, err = run(["--files", str(path)])
    assert code == 0 and err == ""
    entries = [tuple(map(int, re.findall(r"-?\d+", line))) for line in out.splitlines()[1:]]
    assert entries and entries[-1] == (5_000, 11)
    assert [ts for ts, _ in entries] == sorted({ts for ts, _ in entries})
    copy = tmp_path / "copy"
    shutil.copytree(segment, copy)
    tampered = copy / f"{SEG}.timeindex"
    data = bytearray(tampered.read_bytes())
    struct.pack_into(">q", data, len(data) - 12, 4_999)
    tampered.write_bytes(bytes(data))
    code, _, err = run(["--verify-index-only", "--files", str(tampered)])
    assert code == 0
    assert f"Found timestamp mismatch in :{tampered.resolve()}" in err
    assert "  Index timestamp: 4999, log timestamp: 5000" in err


def test_txn_index_snapshot_and_checkpoint_lines(segment: Path) -> None:
    files = [segment / f"{SEG}.txnindex", segment / "00000000000000000012.snapshot",
             segment / "leader-epoch-checkpoint"]
    code, out, err = run(["--files", ",".join(map(str, files))])
    assert code == 0 and err == ""
    assert out.splitlines() == [
        f"Dumping {files[0]}",
        "version: 0 producerId: 9 firstOffset: 9 lastOffset: 10 lastStableOffset: 9",
        f"Dumping {files[1]}",
        "producerId: 11 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 5000 firstSequence: 2147483647 lastSequence: "
        "2147483647 lastOffset: 11 offsetDelta: 0 timestamp: 5000",
        "producerId: 9 producerEpoch: 1 coordinatorEpoch: 5 currentTxnFirstOffset: "
        "OptionalLong[9] lastTimestamp: 4000 firstSequence: 0 lastSequence: 0 lastOffset: 9 "
        "offsetDelta: 0 timestamp: 4000",
        f"Dumping {files[2]}",
        "epoch: 2 startOffset: 0",
        "epoch: 3 startOffset: 9"]


def test_corrupt_snapshot_and_unknown_or_missing_files(segment: Path, tmp_path: Path) -> None:
    bad = tmp_path / "00000000000000000012.snapshot"
    bad.write_bytes((segment / bad.name).read_bytes()[:-1] + b"\x01")
    other = tmp_path / "notes.txt"
    other.write_text("x")
    code, out, err = run(["--files", f"{bad},{other},{tmp_path / 'missing.log'}"])
    assert code == 1                                   # the missing file
    assert "CRC" in err and f"Ignoring unknown file {other}" in err
    assert "missing.log" in err and out.count("Dumping ") == 3


# -- decoders ------------------------------------------------------------------------------

def _record(key: bytes | None, value: bytes | None, offset: int = 7) -> records.Record:
    return records.Record(offset, 0, key, value, [])


def test_offsets_decoder_on_the_brokers_records() -> None:
    key = offsets_topic.offset_commit_key("g", "t", 3)
    value = offsets_topic.offset_commit_value(
        offsets_topic.OffsetAndMetadata(42, "m", commit_timestamp=1_700, leader_epoch=4))
    assert offsets_parser(_record(key, value)) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":3}}',
        '{"version":"3","data":{"offset":42,"leaderEpoch":4,"metadata":"m",'
        '"commitTimestamp":1700}}')
    assert offsets_parser(_record(key, None))[1] == "<DELETE>"
    old = offsets_topic.offset_commit_value(
        offsets_topic.OffsetAndMetadata(1, "", commit_timestamp=5, expire_timestamp=9))
    assert offsets_parser(_record(key, old))[1] == (
        '{"version":"1","data":{"offset":1,"metadata":"","commitTimestamp":5,'
        '"expireTimestamp":9}}')
    assert offsets_parser(_record(b"\x00\x09xyz", b"")) == (
        "Unknown record type 9 at offset 7, skipping.", None)
    assert offsets_parser(_record(b"\x00\x01", b""))[0].startswith("Error at offset 7, skipping.")


def test_offsets_decoder_on_consumer_group_records() -> None:
    import uuid

    from coordinator.group.consumer import record_codec
    from coordinator.group.consumer.model import MemberState
    from coordinator.group.consumer.records import CurrentAssignment, GroupEpoch

    tid = uuid.UUID(int=5)
    key, value = record_codec.encode(CurrentAssignment(
        "g", "m1", member_epoch=4, previous_member_epoch=3, state=MemberState.STABLE,
        assigned={tid: frozenset({0, 2})}, pending_revocation={}))
    k, v = offsets_parser(_record(key, value))
    assert k == '{"type":"8","data":{"groupId":"g","memberId":"m1"}}'
    assert v.startswith('{"version":"0","data":{"memberEpoch":4,"previousMemberEpoch":3,'
                        '"state":0,"assignedPartitions":[{"topicId":"')
    assert '"partitions":[0,2]' in v
    key, _ = record_codec.encode(GroupEpoch("g", tombstone=True))
    assert offsets_parser(_record(key, None)) == (
        '{"type":"3","data":{"groupId":"g"}}', "<DELETE>")


def test_offsets_decoder_expands_consumer_protocol_members() -> None:
    subscription = (struct.pack(">hi", 1, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", -1)
                    + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ii", 1, 0))
    assignment = struct.pack(">hih", 0, 1, 1) + b"t" + struct.pack(">iii", 2, 0, 1) + \
        struct.pack(">i", -1)
    member = offsets_topic.StoredMember("m-1", None, "c", "/127.0.0.1", 300, 100,
                                        subscription, assignment)
    group = offsets_topic.StoredGroup("consumer", 2, "range", "m-1", 1_234, (member,))
    key, value = offsets_parser(_record(offsets_topic.group_metadata_key("g"),
                                        offsets_topic.group_metadata_value(group)))
    assert key == '{"type":"2","data":{"group":"g"}}'
    assert value == (
        '{"version":"3","data":{"protocolType":"consumer","generation":2,"protocol":"range",'
        '"leader":"m-1","currentStateTimestamp":1234,"members":[{"memberId":"m-1",'
        '"groupInstanceId":null,"clientId":"c","clientHost":"/127.0.0.1",'
        '"rebalanceTimeout":300,"sessionTimeout":100,"subscription":{"topics":["t"],'
        '"userData":null,"ownedPartitions":[{"topic":"t","partitions":[0]}]},'
        '"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0,1]}],'
        '"userData":null}}]}}')
    other = offsets_topic.StoredGroup("connect", 1, None, None, -1,
                                      (offsets_topic.StoredMember("m", None, "c", "h", 1, 1,
                                                                  b"\x01\x02", b""),))
    _, value = offsets_parser(_record(offsets_topic.group_metadata_key("g"),
                                      offsets_topic.group_metadata_value(other)))
    assert '"subscription":"AQI="' in value and '"protocol":null' in value   # bytes: base64


def test_transaction_log_decoder_on_the_brokers_records() -> None:
    meta = TxnMetadata("tx", 5, 2, 60_000, TxnState.ONGOING,
                       frozenset({("b", 1), ("a", 0)}), txn_start_timestamp=10,
                       txn_last_update_timestamp=11)
    key = txn_log.transaction_key("tx")
    assert transaction_log_parser(_record(key, txn_log.transaction_value(meta))) == (
        "transaction_metadata::transactionalId=tx",
        "producerId:5,producerEpoch:2,state=Ongoing,partitions=[a-0,b-1],"
        "txnLastUpdateTimestamp=11,txnTimeoutMs=60000")
    empty = TxnMetadata("tx", 5, 2, 60_000, TxnState.EMPTY)
    assert transaction_log_parser(_record(key, txn_log.transaction_value(empty)))[1] == (
        "producerId:5,producerEpoch:2,state=Empty,partitions=[],"
        "txnLastUpdateTimestamp=-1,txnTimeoutMs=60000")
    assert transaction_log_parser(_record(key, None))[1] == "<DELETE>"
    assert transaction_log_parser(_record(None, None))[0].startswith("Error at offset 7")


def test_decoder_flags_imply_contents(segment: Path) -> None:
    log_path = str(segment / f"{SEG}.log")
    code, out, _ = run(["--value-decoder-class", "kafka.serializer.StringDecoder",
                        "--files", log_path])
    assert code == 0
    assert out.splitlines()[0] == ("kafka.serializer.StringDecoder is deprecated. Please use "
                                   "org.apache.kafka.tools.api.StringDecoder instead")
    assert record_lines(out)[0][7] == " key: k0 payload: v0"
    code, _, err = run(["--key-decoder-class", "com.example.Nope", "--files", log_path])
    assert code == 1 and "com.example.Nope" in err
    from tools.dump_log_decoders import decoder_named
    int_decoder, _ = decoder_named("org.apache.kafka.tools.api.IntegerDecoder")
    assert int_decoder(struct.pack(">i", -5)) == "-5"


def test_to_json_follows_the_version() -> None:
    spec = offsets_topic.OFFSET_COMMIT_VALUE
    v = spec.new(offset=1, leader_epoch=2, metadata="", commit_timestamp=3, expire_timestamp=4)
    assert list(to_json(v, 0)) == ["offset", "metadata", "commitTimestamp"]
    assert list(to_json(v, 1)) == ["offset", "metadata", "commitTimestamp", "expireTimestamp"]


# -- pieces and usage ----------------------------------------------------------------------

def test_sequence_arithmetic_wraps_like_kafka() -> None:
    assert fmt.increment_sequence(0x7FFFFFFF, 1) == 0
    assert fmt.increment_sequence(0x7FFFFFFE, 3) == 1
    assert fmt.decrement_sequence(1, 3) == 0x7FFFFFFE
    assert fmt.optional_long(None) == "OptionalLong.empty"
    assert fmt.optional_long(5) == "OptionalLong[5]"


def test_batch_line_shape_with_delete_horizon_and_log_append_time() -> None:
    b = batch([(b"k", b"v")], ts=10)
    attrs = records.read_header(b).attributes | records.DELETE_HORIZON_BIT
    struct.pack_into(">h", b, records.ATTRIBUTES_AT, attrs)
    records.set_log_append_time(b, 0, 77)
    h = records.read_header(b)
    assert fmt.batch_line(h, 0, True) == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 "
        "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: -1 isTransactional: false "
        "isControl: false deleteHorizonMs: OptionalLong[10] position: 0 LogAppendTime: 77 "
        f"size: {h.size} magic: 2 compresscodec: none crc: {h.crc} isvalid: true")


def test_usage_help_and_bad_arguments() -> None:
    code, out, _ = run(["--help"])
    assert code == 0 and "--deep-iteration" in out and "--offsets-decoder" in out
    code, _, err = run([])
    assert code == 2 and "--files" in err
    code, _, err = run(["--max-bytes", "0", "--files", "x.log"])
    assert code == 1 and "--max-bytes" in err


def test_pybroker_front_door_names_the_tool() -> None:
    from broker import cli
    assert cli.TOOLS["dump-log"] == "tools.dump_log"
    assert os.path.exists(Path(dump_log.__file__))
