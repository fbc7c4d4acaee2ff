"""Golden request frames captured from stock clients (tests/golden/<client>/).

The frames were recorded once by tests/tools/capture_golden.py from
confluent-kafka (librdkafka), kafka-python, aiokafka and the Java client; no
client runs here. Every frame must decode with our codec (header and body,
consuming it exactly) and re-encode to the identical bytes, with both the
compiled codec and the reference interpreter. A few semantic checks make sure
the decode put the values where the client meant them.
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c

from protocol.codec_reference import decode_ref, encode_ref
from protocol.headers import decode_request, decode_request_header, encode_request
from protocol.spec import all_apis

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
CLIENTS = ("confluent", "kafka-python", "aiokafka", "java")
CODEC_BITS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MESSAGES = 3  # records per produce step (capture_golden.MESSAGES)

# (client, file) -> reason, for frames a client writes non-canonically (none so far).
NON_CANONICAL: dict[tuple[str, str], str] = {}


def _entries() -> list[dict[str, Any]]:
    out = []
    for client in CLIENTS:
        index = GOLDEN / client / "index.json"
        if index.exists():
            out += json.loads(index.read_text())
    return out


def _frame(e: dict[str, Any]) -> bytes:
    return bytes.fromhex((GOLDEN / e["client"] / e["file"]).read_text().strip())


def _param(e: dict[str, Any]) -> Any:
    reason = NON_CANONICAL.get((e["client"], e["file"]))
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(e, marks=marks, id=f"{e['client']}-{e['file'].removesuffix('.hex')}")


ENTRIES = _entries()


def test_fixtures_cover_every_client_and_the_core_apis() -> None:
    by_client: dict[str, set[int]] = {}
    for e in ENTRIES:
        by_client.setdefault(e["client"], set()).add(e["api_key"])
    assert set(by_client) == set(CLIENTS)
    core = {0, 1, 2, 3, 8, 9, 10, 11, 13, 14, 18, 19, 20}  # produce .. admin
    for client, keys in by_client.items():
        assert core <= keys, f"{client} lacks {sorted(core - keys)}"


@pytest.mark.parametrize("e", [_param(e) for e in ENTRIES])
def test_frame_round_trips(e: dict[str, Any]) -> None:
    frame = _frame(e)
    header, body = decode_request(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        e["api_key"], e["api_version"], e["correlation_id"], e["client_id"])
    assert encode_request(header, body) == frame
    # The reference interpreter reads and writes the body the same way.
    _, pos = decode_request_header(frame)
    spec = all_apis()[e["api_key"]].request
    ref = decode_ref(spec, frame[pos:], e["api_version"])
    assert ref == body
    assert encode_ref(ref, e["api_version"], spec) == frame[pos:]


# ---------------------------------------------------------------- semantics

def _of(api_key: int, client: str | None = None) -> list[Any]:
    return [pytest.param(e, id=f"{e['client']}-{e['file'].removesuffix('.hex')}")
            for e in ENTRIES if e["api_key"] == api_key and client in (None, e["client"])]


def _batches(records: bytes) -> list[tuple[int, int, int, bytes]]:
    """(attributes, record count, crc ok, batch bytes) per magic-2 batch; the
    batches must tile the records field exactly."""
    out = []
    pos = 0
    while pos < len(records):
        (length,) = struct.unpack_from(">i", records, pos + 8)
        end = pos + 12 + length
        assert end <= len(records), "batch runs past the records field"
        assert records[pos + 16] == 2, "magic"
        (crc,) = struct.unpack_from(">I", records, pos + 17)
        (attrs,) = struct.unpack_from(">h", records, pos + 21)
        (count,) = struct.unpack_from(">i", records, pos + 57)
        out.append((attrs, count, crc == crc32c(records[pos + 21:end]), records[pos:end]))
        pos = end
    assert pos == len(records)
    return out


@pytest.mark.parametrize("e", _of(0))
def test_produce_frames_carry_the_batches(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    (td,) = req.topic_data
    assert td.name == f"golden-{e['client']}"
    (pd,) = td.partition_data
    assert pd.index == 0
    records = bytes(pd.records)
    # records is the whole size-prefixed blob: its length is what the frame says
    assert len(records) > 61
    batches = _batches(records)
    assert all(ok for _, _, ok, _ in batches), "CRC-32C mismatch: records field misplaced"
    assert sum(n for _, n, _, _ in batches) >= 1
    codec = e["step"].removeprefix("produce-")
    if codec in CODEC_BITS:
        assert {a & 7 for a, _, _, _ in batches} == {CODEC_BITS[codec]}
    if codec == "none":
        assert sum(n for _, n, _, _ in batches) == MESSAGES
        assert b"key-0" in records and b"trace" in records and b"value-2-" in records


@pytest.mark.parametrize("e", _of(18))
def test_api_versions_frames(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    if e["api_version"] >= 3:
        assert req.client_software_name and req.client_software_version


@pytest.mark.parametrize("e", _of(1))
def test_fetch_frames_ask_for_our_topic(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    topic = f"golden-{e['client']}"
    if not req.topics:  # the Java consumer's closing fetch: final session epoch, no topics
        assert e["api_version"] >= 7 and req.session_epoch == -1
        return
    (ft,) = req.topics
    if e["api_version"] >= 13:
        # capture_server's topic ids are uuid5 of the name
        assert ft.topic_id == uuid.uuid5(uuid.NAMESPACE_URL, "golden/" + topic)
    else:
        assert ft.topic == topic
    assert [p.partition for p in ft.partitions] == [0]
    assert ft.partitions[0].fetch_offset >= 0


@pytest.mark.parametrize("e", _of(11))
def test_join_group_frames(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    assert req.group_id == f"golden-{e['client']}-group"
    assert req.protocol_type == "consumer"
    assert req.protocols and all(p.name and p.metadata for p in req.protocols)


@pytest.mark.parametrize("e", _of(19))
def test_create_topics_frames(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    (t,) = req.topics
    assert (t.name, t.num_partitions, t.replication_factor) == (
        f"golden-{e['client']}-admin", 2, 1)


@pytest.mark.parametrize("e", _of(20))
def test_delete_topics_frames(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    names = [t.name for t in req.topics] if e["api_version"] >= 6 else list(req.topic_names)
    assert names == [f"golden-{e['client']}-admin"]


@pytest.mark.parametrize("e", _of(8))
def test_offset_commit_frames(e: dict[str, Any]) -> None:
    _, req = decode_request(_frame(e))
    assert req.group_id == f"golden-{e['client']}-group"
    (t,) = req.topics
    assert t.name == f"golden-{e['client']}"
    (p,) = t.partitions
    assert p.partition_index == 0 and p.committed_offset >= MESSAGES
