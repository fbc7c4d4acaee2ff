"""The command-line tools: argument parsing, output formats, and whole runs of each
``main`` in-process against the in-memory FakeKafka (from test_client.py), which
runs on its own event loop in a background thread."""

from __future__ import annotations

import asyncio
import io
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from client.partitioner import partition_for_key
from tools import ToolError, parse_key_values, split_config_list
from tools import console_consumer, console_producer, topics
from protocol import compression, records
from tests.unit.client.test_client import FakeKafka


@pytest.fixture
def fake() -> Iterator[FakeKafka]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    broker = asyncio.run_coroutine_threadsafe(FakeKafka().start(), loop).result(5)
    try:
        yield broker
    finally:
        asyncio.run_coroutine_threadsafe(broker.stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def call(tool: Any, argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = tool.main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -- shared helpers ----------------------------------------------------------------------------

def test_key_values_and_config_lists() -> None:
    assert parse_key_values(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ToolError):
        parse_key_values(["novalue"])
    assert split_config_list("a=1,b=[x,y],c=2") == ["a=1", "b=x,y", "c=2"]


# -- topics ------------------------------------------------------------------------------------

def test_topics_argument_checks() -> None:
    assert topics.parse_assignment("0:1,1:2") == {0: [0, 1], 1: [1, 2]}
    for bad in ("0:0", "0:1,2", "a:b"):
        with pytest.raises(ToolError):
            topics.parse_assignment(bad)
    args = topics.parse_args(["--bootstrap-server", "h:1", "--create", "--topic", "t",
                              "--partitions", "3", "--config", "cleanup.policy=compact"])
    assert (args.action, args.partitions, args.configs) == ("create", 3,
                                                            {"cleanup.policy": "compact"})
    for argv, message in [(["--create"], "needs --topic"),
                          (["--alter", "--topic", "t"], "needs --partitions"),
                          (["--create", "--topic", "t", "--partitions", "0"], "greater than 0"),
                          (["--create", "--topic", "t", "--partitions", "2",
                            "--replica-assignment", "0,1"], "cannot be used"),
                          (["--alter-configs", "--topic", "t"], "--add-config")]:
        code, out, _ = call(topics, ["--bootstrap-server", "h:1", *argv])
        assert code == 1 and out.startswith(topics.ERROR_PREFIX) and message in out, out


def test_topics_usage_errors_do_not_exit_the_process() -> None:
    code, _, err = call(topics, ["--bootstrap-server", "h:1", "--list", "--create"])
    assert code == 2 and "not allowed with" in err
    code, out, _ = call(topics, ["--help"])
    assert code == 0 and "--bootstrap-server" in out


def test_topic_id_is_kafka_base64() -> None:
    tid = uuid.UUID(bytes=bytes(range(16)))
    assert topics.topic_id_str(tid) == "AAECAwQFBgcICQoLDA0ODw"


def test_topics_create_list_describe_alter_delete(fake: FakeKafka) -> None:
    bs = ["--bootstrap-server", fake.address]
    code, out, _ = call(topics, [*bs, "--create", "--topic", "orders", "--partitions", "2",
                                 "--replication-factor", "1", "--config", "cleanup.policy=compact"])
    assert (code, out) == (0, "Created topic orders.\n")
    code, out, _ = call(topics, [*bs, "--create", "--topic", "placed",
                                 "--replica-assignment", "1,1"])
    assert code == 0 and fake.topics["placed"].replicas == [[1], [1]]
    code, out, _ = call(topics, [*bs, "--create", "--topic", "orders"])
    assert code == 1 and "TOPIC_ALREADY_EXISTS" in out
    assert call(topics, [*bs, "--create", "--topic", "orders", "--if-not-exists"])[0] == 0
    fake.add_topic("__consumer_offsets", 1)

    assert call(topics, [*bs, "--list"])[1] == "__consumer_offsets\norders\nplaced\n"
    assert call(topics, [*bs, "--list", "--exclude-internal"])[1] == "orders\nplaced\n"
    assert call(topics, [*bs, "--list", "--topic", "pl.*"])[1] == "placed\n"

    code, out, _ = call(topics, [*bs, "--describe", "--topic", "orders"])
    tid = topics.topic_id_str(fake.topics["orders"].topic_id)
    assert code == 0
    assert out.splitlines() == [
        f"Topic: orders\tTopicId: {tid}\tPartitionCount: 2\tReplicationFactor: 1\t"
        "Configs: cleanup.policy=compact,segment.bytes=1073741824",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\tLastKnownElr: N/A",
    ]
    code, out, _ = call(topics, [*bs, "--alter", "--topic", "orders", "--partitions", "5"])
    assert code == 0 and len(fake.topics["orders"].logs) == 5
    code, out, _ = call(topics, [*bs, "--alter", "--topic", "orders", "--partitions", "2"])
    assert code == 1 and "INVALID_PARTITIONS" in out

    code, out, _ = call(topics, [*bs, "--delete", "--topic", "orders"])
    assert code == 0 and "orders" not in fake.topics
    code, out, _ = call(topics, [*bs, "--describe", "--topic", "orders"])
    assert (code, out) == (1, f"{topics.ERROR_PREFIX}Topic 'orders' does not exist as expected\n")
    assert call(topics, [*bs, "--delete", "--topic", "orders", "--if-exists"])[0] == 0


def test_topics_configs(fake: FakeKafka) -> None:
    bs = ["--bootstrap-server", fake.address]
    fake.add_topic("t", 1)
    code, out, _ = call(topics, [*bs, "--alter-configs", "--topic", "t",
                                 "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]"])
    assert (code, out) == (0, "Completed updating config for topic t.\n")
    assert fake.topics["t"].configs == {"retention.ms": "1000",
                                        "cleanup.policy": "compact,delete"}
    code, out, _ = call(topics, [*bs, "--alter-configs", "--topic", "t",
                                 "--delete-config", "retention.ms"])
    assert code == 0 and fake.topics["t"].configs == {"cleanup.policy": "compact,delete"}
    code, out, _ = call(topics, [*bs, "--describe-configs", "--topic", "t"])
    assert out.splitlines() == [
        "Dynamic configs for topic t are:",
        "  cleanup.policy=compact,delete sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete}"]
    code, out, _ = call(topics, [*bs, "--describe-configs", "--topic", "t", "--all"])
    assert out.splitlines()[0] == "All configs for topic t are:" and len(out.splitlines()) == 4


def test_topics_unreachable_server() -> None:
    code, out, _ = call(topics, ["--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "2"])
    assert code == 1 and "no bootstrap server reachable" in out


# -- console producer ---------------------------------------------------------------------------

def test_producer_parse_line() -> None:
    assert console_producer.parse_line("a:b:c", 1, True, ":") == (b"a", b"b:c")
    assert console_producer.parse_line("x\ty", 1, False, "\t") == (None, b"x\ty")
    with pytest.raises(ToolError, match="line number 3"):
        console_producer.parse_line("nokey", 3, True, ":")


def test_producer_keys_go_to_their_murmur2_partition(fake: FakeKafka) -> None:
    fake.add_topic("t", 4)
    keys = [f"user-{i}" for i in range(40)]
    lines = "".join(f"{k}:value-{i}\n" for i, k in enumerate(keys))
    code, _, err = call(console_producer, ["--bootstrap-server", fake.address, "--topic", "t",
                                           "--property", "parse.key=true",
                                           "--property", "key.separator=:",
                                           "--batch-size", "7"], lines)
    assert (code, err) == (0, "")
    seen = 0
    for p in range(4):
        for rec in fake.records("t", p):
            assert partition_for_key(rec.key, 4) == p
            seen += 1
        values = [int(r.value.split(b"-")[1]) for r in fake.records("t", p)]
        assert values == sorted(values)   # per-partition order kept
    assert seen == 40


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_producer_compression_and_consumer_reads_it_back(fake: FakeKafka, codec: str) -> None:
    if not compression.available(console_producer.CODECS[codec]):
        pytest.skip(f"{codec} unavailable")
    fake.add_topic("c", 1)
    lines = "".join(f"line {i}\n" for i in range(50))
    code, _, _ = call(console_producer, ["--bootstrap-server", fake.address, "--topic", "c",
                                         "--compression-type", codec], lines)
    assert code == 0
    batches = fake.topics["c"].logs[0]
    assert batches and all(records.read_header(b).compression == console_producer.CODECS[codec]
                           for b in batches)
    code, out, err = call(console_consumer, ["--bootstrap-server", fake.address, "--topic", "c",
                                             "--from-beginning", "--max-messages", "50"])
    assert code == 0 and out == lines and "Processed a total of 50 messages" in err


def test_producer_acks_zero_and_auto_created_topic(fake: FakeKafka) -> None:
    code, _, err = call(console_producer, ["--bootstrap-server", fake.address, "--topic", "auto",
                                           "--acks", "0"], "a\nb\nc\n")
    assert code == 0, err
    assert len(fake.topics["auto"].logs) == 2   # the fake auto-creates with 2 partitions
    deadline = time.monotonic() + 5   # acks=0: nothing says when the broker has appended
    while True:
        got = sorted(r.value for p in range(2) for r in fake.records("auto", p))
        if got == [b"a", b"b", b"c"] or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert got == [b"a", b"b", b"c"]


def test_producer_reports_missing_separator(fake: FakeKafka) -> None:
    fake.add_topic("t", 1)
    code, _, err = call(console_producer, ["--bootstrap-server", fake.address, "--topic", "t",
                                           "--property", "parse.key=true"], "k\tv\nbroken\n")
    assert code == 1 and "No key separator found on line number 2" in err


# -- console consumer ----------------------------------------------------------------------------

def _fill(fake: FakeKafka, topic: str, partitions: int, per_partition: int) -> None:
    t = fake.add_topic(topic, partitions)
    for p in range(partitions):
        for i in range(0, per_partition, 3):
            batch = records.build_batch(
                [(f"k{p}".encode(), f"p{p}-{j}".encode(), 1000 + j, [("h", b"v")])
                 for j in range(i, min(i + 3, per_partition))], base_offset=t.next_offset(p))
            t.logs[p].append(bytes(batch))


def test_consumer_argument_checks() -> None:
    for argv, message in [(["--group", "g"], "does not join groups"),
                          (["--offset", "3"], "partition is required"),
                          (["--partition", "0", "--offset", "x"], "invalid --offset")]:
        code, _, err = call(console_consumer, ["--bootstrap-server", "h:1", "--topic", "t", *argv])
        assert code == 1 and message in err
    code, _, err = call(console_consumer, ["--bootstrap-server", "h:1", "--topic", "t",
                                           "--from-beginning", "--offset", "1"])
    assert code == 2


def test_consumer_from_beginning_with_keys(fake: FakeKafka) -> None:
    _fill(fake, "t", 2, 5)
    code, out, err = call(console_consumer, ["--bootstrap-server", fake.address, "--topic", "t",
                                             "--from-beginning", "--max-messages", "10",
                                             "--property", "print.key=true",
                                             "--property", "key.separator=:"])
    assert code == 0 and "Processed a total of 10 messages" in err
    lines = out.splitlines()
    for p in range(2):
        assert [ln for ln in lines if ln.startswith(f"k{p}:")] == \
            [f"k{p}:p{p}-{j}" for j in range(5)]


def test_consumer_partition_offset_and_formatting(fake: FakeKafka) -> None:
    _fill(fake, "t", 2, 7)
    code, out, _ = call(console_consumer, [
        "--bootstrap-server", fake.address, "--topic", "t", "--partition", "1", "--offset", "4",
        "--max-messages", "2", "--property", "print.offset=true",
        "--property", "print.partition=true", "--property", "print.timestamp=true",
        "--property", "print.headers=true"])
    assert code == 0
    assert out.splitlines() == ["CreateTime:1004\tPartition:1\tOffset:4\th:v\tp1-4",
                                "CreateTime:1005\tPartition:1\tOffset:5\th:v\tp1-5"]


def test_consumer_latest_times_out_with_nothing(fake: FakeKafka) -> None:
    _fill(fake, "t", 1, 4)
    code, out, err = call(console_consumer, ["--bootstrap-server", fake.address, "--topic", "t",
                                             "--timeout-ms", "300"])
    assert code == 0 and out == "" and "Processed a total of 0 messages" in err


def test_consumer_unknown_topic(fake: FakeKafka) -> None:
    fake.auto_create = False
    original = console_consumer.Consumer.refresh

    async def quick(self: Any, attempts: int = 2) -> Any:
        return await original(self, 2)
    console_consumer.Consumer.refresh = quick  # type: ignore[method-assign]
    try:
        code, _, err = call(console_consumer, ["--bootstrap-server", fake.address,
                                               "--topic", "ghost"])
    finally:
        console_consumer.Consumer.refresh = original  # type: ignore[method-assign]
    assert code == 1 and "ghost" in err


def test_format_record_null_value_and_key() -> None:
    rec = records.Record(5, 10, None, None, [])
    fmt = console_consumer.Format(print_key=True)
    assert console_consumer.format_record(rec, 0, fmt) == "null\tnull\n"
    assert console_consumer.format_record(rec, 0, console_consumer.Format()) == "null\n"


def test_consumer_rides_over_a_lost_leader_connection() -> None:
    from client import KafkaAdmin

    async def main() -> None:
        fake = await FakeKafka().start()
        try:
            _fill(fake, "t", 1, 3)
            async with KafkaAdmin(fake.address, timeout=2) as admin:
                consumer = console_consumer.Consumer(admin, "t")
                await consumer.refresh()
                await consumer.seek([0], console_consumer.EARLIEST)
                assert [r.value for _, r, _ in await consumer.poll(10)] == \
                    [b"p0-0", b"p0-1", b"p0-2"]
                fake.silent.add(1)            # the next fetch hangs ...
                task = asyncio.create_task(consumer.poll(10))
                await asyncio.sleep(0.05)
                fake.drop_connections()       # ... and its connection drops
                assert await task == []
                fake.silent.clear()
                t = fake.topics["t"]
                t.logs[0].append(bytes(records.build_batch([(None, b"more", 1)],
                                                           base_offset=t.next_offset(0))))
                assert [r.value for _, r, _ in await consumer.poll(10)] == [b"more"]
        finally:
            await fake.stop()
    asyncio.run(asyncio.wait_for(main(), 10))
