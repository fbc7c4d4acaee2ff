"""Record-level validation on a real broker (issue 17), as Kafka 3.9's LogValidator.

One ZooKeeper and one broker; our wire client to see the exact Produce response
(error code, error_message, KIP-467 record_errors), librdkafka to see what a stock
client makes of it. After every refusal nothing was appended (list offsets, and a
fetch of the partition holds only good batches), and a good batch still lands.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest

from protocol import compression
from protocol.compression import Codec
from protocol.records import (
    CRC_AT, HEADER, HEADER_SIZE, LOG_OVERHEAD, build_batch, compute_crc, iter_all_records,
)
from tests.integration.cluster import Cluster, MakeCluster, WireClient

pytestmark = pytest.mark.integration

CORRUPT_MESSAGE, INVALID_TIMESTAMP, INVALID_RECORD = 2, 32, 87
MESSAGE_MAX = 256 * 1024
COMPACTED = "rv-compacted"
BOUNDED = "rv-bounded-ts"
PLAIN = "rv-plain"
LEGACY = "rv-legacy-configs"


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("record-validation", overrides={
        "message.max.bytes": str(MESSAGE_MAX), "auto.create.topics.enable": "false"})
    with WireClient(c.brokers[0].port) as w:
        assert w.create_topic(COMPACTED, 1, configs={"cleanup.policy": "compact"}) == 0
        assert w.create_topic(BOUNDED, 1, configs={
            "message.timestamp.before.max.ms": "60000",
            "message.timestamp.after.max.ms": "60000"}) == 0
        assert w.create_topic(PLAIN, 1) == 0
    for topic in (COMPACTED, BOUNDED, PLAIN):
        wait_leader(c.brokers[0].port, topic)
    return c


def wait_leader(port: int, topic: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with WireClient(port) as w:
            t = w.metadata([topic]).topics[0]
        if t.error_code == 0 and t.partitions and t.partitions[0].leader_id >= 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic}: no leader after 20 s")


@pytest.fixture
def port(cluster: Cluster) -> Iterator[int]:
    p = cluster.brokers[0].port
    yield p
    assert cluster.brokers[0].running, cluster.brokers[0].tail()


def now_ms() -> int:
    return int(time.time() * 1000)


def end_offset(c: WireClient, topic: str) -> int:
    err, offset = c.list_offset(topic, 0)
    assert err == 0
    return offset


def assert_only_good_data(c: WireClient, topic: str) -> None:
    """Every record in the log parses, and none is keyless on the compacted topic."""
    err, hw, data = c.fetch_batches(topic, 0, 0)
    assert err == 0
    recs = list(iter_all_records(data))
    assert len(recs) == hw
    if topic == COMPACTED:
        assert all(r.key is not None for r in recs)


# ---- KIP-467 record errors --------------------------------------------------------------

def test_keyless_records_on_a_compacted_topic_are_refused(port: int) -> None:
    with WireClient(port) as c:
        before = end_offset(c, COMPACTED)
        batch = build_batch([(b"a", b"1", now_ms()), (None, b"2", now_ms()),
                             (b"c", b"3", now_ms())])
        r = c.produce(COMPACTED, 0, batch, version=8)
        assert r.error_code == INVALID_RECORD
        assert [(e.batch_index, e.batch_index_error_message) for e in r.record_errors] == [
            (1, f"Compacted topic cannot accept message without key in topic partition {COMPACTED}-0")]
        assert r.error_message.startswith("One or more records have been rejected due to 1 record")
        assert end_offset(c, COMPACTED) == before
        # before v8 the response has no record errors: the code alone
        r7 = c.produce(COMPACTED, 0, batch, version=7)
        assert r7.error_code == INVALID_RECORD
        good = c.produce(COMPACTED, 0, build_batch([(b"a", b"1", now_ms())]))
        assert (good.error_code, good.base_offset) == (0, before)
        assert_only_good_data(c, COMPACTED)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_timestamps_outside_the_topic_bounds_are_refused(port: int, codec: Codec) -> None:
    with WireClient(port) as c:
        before = end_offset(c, BOUNDED)
        now = now_ms()
        batch = build_batch([(b"k", b"old", now - 3_600_000), (b"k", b"ok", now),
                             (b"k", b"future", now + 3_600_000)], codec=codec)
        r = c.produce(BOUNDED, 0, batch, version=9)
        assert r.error_code == INVALID_TIMESTAMP
        assert r.error_message == "One or more records have been rejected due to invalid timestamp"
        assert [e.batch_index for e in r.record_errors] == [0, 2]
        assert "is out of range" in r.record_errors[0].batch_index_error_message
        assert end_offset(c, BOUNDED) == before
        ok = c.produce(BOUNDED, 0, build_batch([(b"k", b"v", now_ms())], codec=codec))
        assert (ok.error_code, ok.base_offset) == (0, before)


def test_librdkafka_sees_invalid_record_for_a_null_key(cluster: Cluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    p = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0,
                                  "acks": 1, "retries": 0, "enable.idempotence": False})
    errors: list[object] = []
    p.produce(COMPACTED, value=b"no key", partition=0,
              on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(20) == 0
    p.produce(COMPACTED, key=b"k", value=b"keyed", partition=0,
              on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(20) == 0
    codes = [e.code() if e is not None else 0 for e in errors]
    assert codes == [confluent_kafka.KafkaError.INVALID_RECORD, 0], errors


# ---- records that do not parse inside a valid CRC ---------------------------------------

def _rebatch(good: bytearray, payload: bytes) -> bytearray:
    """``good``'s header over a new records section, lengths and CRC fixed up."""
    out = bytearray(good[:HEADER_SIZE]) + payload
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    struct.pack_into(">I", out, CRC_AT, compute_crc(out, 0, len(out)))
    return out


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_garbage_inside_a_compressed_batch_never_reaches_the_log(port: int, codec: Codec) -> None:
    with WireClient(port) as c:
        before = end_offset(c, PLAIN)
        good = build_batch([(b"k%d" % i, b"v" * 50, now_ms()) for i in range(5)], codec=codec)
        garbage = bytes((i * 131 + 17) % 256 for i in range(400))
        r = c.produce(PLAIN, 0, _rebatch(good, compression.compress(codec, garbage)))
        assert r.error_code == INVALID_RECORD, r
        # bytes that do not even inflate
        r = c.produce(PLAIN, 0, _rebatch(good, garbage))
        assert r.error_code in (CORRUPT_MESSAGE, INVALID_RECORD), r
        # the right bytes but a recordsCount one too high
        body = compression.decompress(codec, memoryview(good)[HEADER_SIZE:])
        wrong = bytearray(good)
        fields = list(HEADER.unpack_from(wrong, 0))
        fields[-1] += 1
        fields[6] += 1  # lastOffsetDelta, so the header itself stays consistent
        HEADER.pack_into(wrong, 0, *fields)
        r = c.produce(PLAIN, 0, _rebatch(wrong, compression.compress(codec, body)))
        assert r.error_code == INVALID_RECORD, r
        assert end_offset(c, PLAIN) == before
        assert c.produce(PLAIN, 0, good).error_code == 0
        assert_only_good_data(c, PLAIN)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD])
def test_decompression_bomb_is_corrupt_message(port: int, codec: Codec) -> None:
    """A batch under message.max.bytes that inflates beyond the bound (16 MiB here: the
    floor, above 16 x this topic's message.max.bytes)."""
    with WireClient(port) as c:
        before = end_offset(c, PLAIN)
        value = bytes(64 * MESSAGE_MAX + 1024)  # zeros: 16 MiB + 1 KiB
        bomb = build_batch([(b"k", value, now_ms())], codec=codec)
        assert len(bomb) < MESSAGE_MAX
        r = c.produce(PLAIN, 0, bomb)
        assert r.error_code == CORRUPT_MESSAGE, r
        assert "inflates beyond" in (r.error_message or "")
        assert end_offset(c, PLAIN) == before
        # the same data, 1/8 of it, is a legit highly compressible batch
        ok = build_batch([(b"k", bytes(8 * MESSAGE_MAX), now_ms())], codec=codec)
        assert c.produce(PLAIN, 0, ok).error_code == 0


# ---- legacy topic configs ---------------------------------------------------------------

def test_legacy_topic_configs_are_accepted_as_kafka_3_9(port: int, cluster: Cluster) -> None:
    with WireClient(port) as c:
        assert c.create_topic(LEGACY, 1, configs={
            "message.format.version": "0.10.0.0",          # ignored, with a warning
            "message.timestamp.difference.max.ms": "60000",  # deprecated, still enforced
            "message.downconversion.enable": "false"}) == 0
        assert c.create_topic(LEGACY + "-bad", 1,
                              configs={"message.format.version": "0.10.9"}) != 0
    wait_leader(port, LEGACY)
    with WireClient(port) as c:
        r = c.produce(LEGACY, 0, build_batch([(b"k", b"v", now_ms() - 3_600_000)]))
        assert r.error_code == INVALID_TIMESTAMP  # difference.max.ms fills in for before/after
        assert c.produce(LEGACY, 0, build_batch([(b"k", b"v", now_ms())])).error_code == 0
    deadline = time.monotonic() + 5
    while "message.format.version with value `0.10.0.0` is ignored" not in \
            cluster.brokers[0].log_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "message.format.version with value `0.10.0.0` is ignored" in cluster.brokers[0].log_text()
