"""Bad input against a real broker, with other connections working throughout.

A witness thread keeps one connection busy (ApiVersions, Metadata, Produce of a
good batch, ListOffsets) for the whole module; every case then checks that a
fresh connection still works, and the module ends by checking the witness saw
no failure and that its records are all there, dense.

Broker behaviour expected (as Apache Kafka 3.9):
- a frame that cannot be parsed (truncated body, absurd array count, garbage,
  unknown API key, unsupported version of anything but ApiVersions) closes that
  connection and only that one;
- ApiVersions at an unknown version (above ours, or negative): UNSUPPORTED_VERSION
  (35) in a v0 body naming exactly one entry, ApiVersions' own range; the
  connection stays open;
- tiny frames with huge counts (CVE-2022-34917), for every API: closed, and the
  broker's RSS does not grow; a stock client works afterwards;
- a size prefix above socket.request.max.bytes, or negative: connection closed;
- a batch with a bad CRC: CORRUPT_MESSAGE (2), nothing appended;
- a batch above message.max.bytes: MESSAGE_TOO_LARGE (10), nothing appended;
- Produce to a partition or topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (3).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from protocol.api_keys import ApiKey
from protocol.records import CRC_AT, build_batch, iter_batches
from tests.integration.cluster import Cluster, MakeCluster, WireClient

pytestmark = pytest.mark.integration

SOCKET_MAX = 2 * 1024 * 1024
MESSAGE_MAX = 256 * 1024
TOPIC = "bad-input"
WITNESS_TOPIC = "bad-input-witness"

CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION = 2, 10, 3, 35


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    c = make_cluster("bad-input", overrides={
        "socket.request.max.bytes": str(SOCKET_MAX),
        "message.max.bytes": str(MESSAGE_MAX),
        "auto.create.topics.enable": "false",
    })
    port = c.brokers[0].port
    with WireClient(port) as w:
        assert w.create_topic(TOPIC, 2) == 0
        assert w.create_topic(WITNESS_TOPIC, 1) == 0
    wait_leader(port, TOPIC, 2)
    wait_leader(port, WITNESS_TOPIC, 1)
    return c


def wait_leader(port: int, topic: str, partitions: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with WireClient(port) as w:
            t = w.metadata([topic]).topics[0]
        if t.error_code == 0 and len(t.partitions) == partitions and \
                all(p.leader_id >= 0 for p in t.partitions):
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic}: no leaders after 20 s")


def one_batch(n: int = 3, size: int = 10) -> bytearray:
    return build_batch([(b"k%d" % i, os.urandom(size), int(time.time() * 1000)) for i in range(n)])


class Witness(threading.Thread):
    """Keeps one connection busy during the whole module."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop_flag = threading.Event()
        self.rounds = 0
        self.produced = 0
        self.errors: list[str] = []

    def run(self) -> None:
        try:
            with WireClient(self.port) as w:
                while not self.stop_flag.is_set():
                    assert w.api_versions().error_code == 0
                    assert w.metadata([WITNESS_TOPIC]).topics[0].error_code == 0
                    r = w.produce(WITNESS_TOPIC, 0, one_batch(2))
                    assert r.error_code == 0 and r.base_offset == self.produced, \
                        f"witness produce: error {r.error_code} base {r.base_offset}, expected {self.produced}"
                    self.produced += 2
                    assert w.list_offset(WITNESS_TOPIC, 0) == (0, self.produced)
                    self.rounds += 1
                    time.sleep(0.005)
        except Exception as e:  # noqa: BLE001 - reported by the last test
            self.errors.append(f"{type(e).__name__}: {e}")


@pytest.fixture(scope="module")
def witness(cluster: Cluster) -> Iterator[Witness]:
    w = Witness(cluster.brokers[0].port)
    w.start()
    yield w
    w.stop_flag.set()
    w.join(10)


@pytest.fixture
def port(cluster: Cluster, witness: Witness) -> Iterator[int]:
    p = cluster.brokers[0].port
    yield p
    # after every case: the broker is alive, a fresh connection works, the witness is fine
    assert cluster.brokers[0].running, cluster.brokers[0].tail()
    with WireClient(p) as c:
        assert c.api_versions().error_code == 0
    assert not witness.errors, witness.errors


def expect_closed(c: WireClient) -> None:
    assert c.is_closed_by_peer(wait=5.0), "the broker kept the connection open"


# -- framing --------------------------------------------------------------------------


def test_truncated_frame_then_disconnect(port: int) -> None:
    with WireClient(port) as c:
        c.send_raw(struct.pack(">i", 100) + b"\x00\x03\x00\x01")  # promises 100 bytes, sends 4
    with WireClient(port) as c:  # the half frame must not have hurt anything
        assert c.metadata([TOPIC]).topics[0].error_code == 0


def test_truncated_body_closes(port: int) -> None:
    with WireClient(port) as c:
        cid, head = c.header_bytes(ApiKey.METADATA, 1)
        c.send_frame(head + struct.pack(">i", 2) + struct.pack(">h", 9) + b"abc")  # name cut short
        expect_closed(c)


def test_frame_shorter_than_header_closes(port: int) -> None:
    with WireClient(port) as c:
        c.send_frame(b"\x00\x03\x00")
        expect_closed(c)


@pytest.mark.parametrize("size", [0x7FFFFFFF, SOCKET_MAX + 1, -5])
def test_absurd_or_oversized_length_closes(port: int, size: int) -> None:
    with WireClient(port) as c:
        c.send_raw(struct.pack(">i", size) + b"\x00" * 64)
        expect_closed(c)


def test_oversized_request_with_payload_closes(port: int, cluster: Cluster) -> None:
    """A whole frame above socket.request.max.bytes, actually sent."""
    with WireClient(port) as c:
        cid, head = c.header_bytes(ApiKey.PRODUCE, 8)
        payload = head + b"\x00" * (SOCKET_MAX + 1024 - len(head))
        try:
            c.send_frame(payload)
        except (BrokenPipeError, ConnectionResetError):
            return  # closed while we were still writing: fine
        expect_closed(c)


@pytest.mark.parametrize("count", [0x7FFFFFFF, 1_000_000_000])
def test_absurd_array_count_closes(port: int, count: int) -> None:
    with WireClient(port) as c:
        cid, head = c.header_bytes(ApiKey.METADATA, 1)
        c.send_frame(head + struct.pack(">i", count))
        expect_closed(c)


@pytest.mark.parametrize("count", [0x7FFFFFFF, -7])
def test_absurd_array_count_in_produce_closes(port: int, count: int) -> None:
    """Produce's topic array is not nullable: a huge or negative count is malformed.
    (Metadata v1+'s topic array is nullable: any negative count means null there.)"""
    with WireClient(port) as c:
        cid, head = c.header_bytes(ApiKey.PRODUCE, 3)
        # transactional id null, acks 1, timeout, topic count, then nothing
        c.send_frame(head + struct.pack(">hhii", -1, 1, 1000, count))
        expect_closed(c)


def test_absurd_compact_array_count_closes(port: int) -> None:
    """Metadata v9 is flexible: a compact array count of 2^35 as a uvarint."""
    with WireClient(port) as c:
        cid, head = c.header_bytes(ApiKey.METADATA, 9)
        c.send_frame(head + b"\xff\xff\xff\xff\x7f" + b"\x00" * 4)
        expect_closed(c)


def test_garbage_bytes_close(port: int) -> None:
    for seed in range(3):
        with WireClient(port) as c:
            junk = bytes((i * 37 + seed * 11 + 5) % 256 for i in range(200))
            c.send_frame(junk)
            expect_closed(c)


def test_garbage_without_framing_closes(port: int) -> None:
    with WireClient(port) as c:
        c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        expect_closed(c)


# -- keys and versions ----------------------------------------------------------------


@pytest.mark.parametrize("key", [999, 32767, -1])
def test_unknown_api_key_closes(port: int, key: int) -> None:
    with WireClient(port) as c:
        c.send_frame(struct.pack(">hhih", key, 0, 42, -1))
        expect_closed(c)


def test_unsupported_version_of_metadata_closes(port: int) -> None:
    with WireClient(port) as c:
        c.send_frame(struct.pack(">hhih", ApiKey.METADATA, 99, 42, -1) + struct.pack(">i", -1))
        expect_closed(c)


def test_unsupported_api_versions_version_answers_v0(port: int) -> None:
    with WireClient(port) as c:
        c.send_frame(struct.pack(">hhih", ApiKey.API_VERSIONS, 77, 4242, -1) + b"\x00" * 8)
        frame = c.recv_frame()
        cid, err, n = struct.unpack_from(">ihi", frame, 0)
        assert (cid, err) == (4242, UNSUPPORTED_VERSION)
        entries = [struct.unpack_from(">hhh", frame, 10 + 6 * i) for i in range(n)]
        assert len(frame) == 10 + 6 * n, "a v0 body: no throttle time, no tagged fields"
        assert any(k == ApiKey.API_VERSIONS and lo == 0 and 3 <= hi < 77 for k, lo, hi in entries), entries
        # and the connection stays usable
        assert c.api_versions().error_code == 0


# -- issue 17: keys and versions exactly as Kafka 3.9 (SocketServer + RequestContext) ---------
# ApiKeys.isVersionEnabled accepts any version of ApiVersions only; RequestContext treats an
# unsupported ApiVersions as v0 and KafkaApis answers ApiVersionsRequest.getErrorResponse:
# UNSUPPORTED_VERSION with exactly one entry, ApiVersions' own range. Anything else the
# header names but the broker does not serve throws in parseRequestHeader: connection closed.


def _api_versions_error_entries(c: WireClient, version: int, correlation_id: int) -> list[tuple[int, int, int]]:
    c.send_frame(struct.pack(">hhih", ApiKey.API_VERSIONS, version, correlation_id, -1) + b"\x00" * 4)
    frame = c.recv_frame()
    cid, err, n = struct.unpack_from(">ihi", frame, 0)
    assert (cid, err) == (correlation_id, UNSUPPORTED_VERSION)
    assert len(frame) == 10 + 6 * n
    return [struct.unpack_from(">hhh", frame, 10 + 6 * i) for i in range(n)]


def test_unsupported_api_versions_lists_exactly_api_versions(port: int) -> None:
    with WireClient(port) as c:
        (entry,) = _api_versions_error_entries(c, 32000, 7)
        assert entry[0] == ApiKey.API_VERSIONS and entry[1] == 0 and entry[2] >= 3
        # a negative version is unsupported as well: the same answer, connection kept
        assert _api_versions_error_entries(c, -1, 8) == [entry]
        assert c.api_versions().error_code == 0


@pytest.mark.parametrize("key, version", [
    (ApiKey.PRODUCE, 99), (ApiKey.FETCH, -1), (ApiKey.METADATA, 32767),
    (52, 0),    # Vote: a KRaft controller API, not served by a ZooKeeper-mode broker
    (1000, 3),  # no such key at all
])
def test_unserved_key_or_version_closes_only_that_connection(port: int, key: int,
                                                               version: int) -> None:
    with WireClient(port) as other:
        assert other.api_versions().error_code == 0
        with WireClient(port) as c:
            c.send_frame(struct.pack(">hhih", key, version, 42, -1) + b"\x00" * 16)
            expect_closed(c)
        assert other.metadata([TOPIC]).topics[0].error_code == 0


def test_cve_2022_34917_frames_leave_memory_bounded(port: int, cluster: Cluster) -> None:
    """Tiny frames announcing 2^31 elements or 4 GiB strings, for every API and version,
    sent over real connections: each closes its connection, RSS does not grow."""
    from protocol.spec import all_apis
    from tests.unit.protocol.test_decode_limits import hostile_frames

    pid = cluster.brokers[0].pid
    assert pid is not None

    def rss_kib() -> int:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    before = rss_kib()
    sent = 0
    for key, spec in sorted(all_apis().items()):
        req = spec.request
        for version in (req.valid.lo, req.valid.hi):
            for body in list(hostile_frames(req, version))[:4]:
                with WireClient(port) as c:
                    _cid, head = c.header_bytes(key, version)
                    c.send_frame(head + body)
                    expect_closed(c)
                sent += 1
    assert sent > 200
    grown = rss_kib() - before
    assert grown < 50 * 1024, f"broker RSS grew {grown} KiB over {sent} hostile frames"


def test_a_stock_client_works_after_the_bad_input(port: int, cluster: Cluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    p = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    delivered: list[object] = []
    for i in range(10):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v", partition=1,
                  on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(20) == 0
    assert delivered == [None] * 10
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap,
                                         "group.id": "bad-input-after", "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 1, 0)])
        seen = 0
        deadline = time.monotonic() + 20
        while seen < 10 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                seen += 1
        assert seen >= 10
    finally:
        consumer.close()


def test_pipelined_requests_answered_in_order(port: int) -> None:
    with WireClient(port) as c:
        ids = []
        for _ in range(20):
            cid, payload = c.request_bytes(ApiKey.METADATA, 1, _metadata_body([TOPIC]))
            ids.append(cid)
            c.send_frame(payload)
        got = [struct.unpack_from(">i", c.recv_frame())[0] for _ in ids]
        assert got == ids


def _metadata_body(topics: list[str]):  # type: ignore[no-untyped-def]
    from protocol.spec import api
    req = api(ApiKey.METADATA).request
    return req.new(topics=[req.structs["MetadataRequestTopic"].new(name=t) for t in topics])


# -- produce validation ---------------------------------------------------------------


def test_bad_crc_is_corrupt_message_nothing_appended(port: int) -> None:
    with WireClient(port) as c:
        before = c.list_offset(TOPIC, 0)
        batch = one_batch(5)
        batch[CRC_AT] ^= 0xFF
        r = c.produce(TOPIC, 0, batch)
        assert r.error_code == CORRUPT_MESSAGE
        assert c.list_offset(TOPIC, 0) == before
        # a flipped payload byte (CRC intact but wrong) too
        batch = one_batch(5)
        batch[-1] ^= 0x01
        assert c.produce(TOPIC, 0, batch).error_code == CORRUPT_MESSAGE
        assert c.list_offset(TOPIC, 0) == before
        # a good batch afterwards lands at the old end
        good = c.produce(TOPIC, 0, one_batch(5))
        assert (good.error_code, good.base_offset) == (0, before[1])
        assert c.list_offset(TOPIC, 0) == (0, before[1] + 5)


def test_truncated_batch_is_rejected_nothing_appended(port: int) -> None:
    with WireClient(port) as c:
        before = c.list_offset(TOPIC, 1)
        batch = one_batch(5)
        r = c.produce(TOPIC, 1, batch[:-7])
        assert r.error_code == CORRUPT_MESSAGE
        assert c.list_offset(TOPIC, 1) == before


def test_batch_above_message_max_bytes_nothing_appended(port: int) -> None:
    with WireClient(port) as c:
        before = c.list_offset(TOPIC, 1)
        r = c.produce(TOPIC, 1, one_batch(1, size=MESSAGE_MAX + 1000))
        assert r.error_code == MESSAGE_TOO_LARGE
        assert c.list_offset(TOPIC, 1) == before


def test_produce_to_missing_partition(port: int) -> None:
    with WireClient(port) as c:
        assert c.produce(TOPIC, 7, one_batch()).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert c.produce(TOPIC, -1, one_batch()).error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert c.produce("no-such-topic", 0, one_batch()).error_code == UNKNOWN_TOPIC_OR_PARTITION
        # no auto-creation happened through Produce
        assert c.metadata(["no-such-topic"]).topics[0].error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_fetched_data_matches_good_batches_only(port: int) -> None:
    """Everything in partition 0 is whole, CRC-valid and densely numbered."""
    with WireClient(port) as c:
        err, hw, data = c.fetch_batches(TOPIC, 0, 0)
        assert err == 0
        expect = 0
        for _pos, h in iter_batches(data):
            assert h.base_offset == expect
            expect = h.last_offset + 1
        assert expect == hw


def test_witness_survived(witness: Witness, cluster: Cluster) -> None:
    deadline = time.monotonic() + 10
    while witness.rounds < 20 and not witness.errors and time.monotonic() < deadline:
        time.sleep(0.05)
    witness.stop_flag.set()
    witness.join(10)
    assert not witness.errors, witness.errors
    assert witness.rounds >= 20, f"witness made only {witness.rounds} rounds in 10 s"
    with WireClient(cluster.brokers[0].port) as c:
        assert c.list_offset(WITNESS_TOPIC, 0) == (0, witness.produced)
