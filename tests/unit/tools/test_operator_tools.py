"""The operators' tools without a broker: argument parsing, the errors bad input
gets, and output formatting (Kafka 3.9's shapes); the record pipeline's batching
against a fake ``send_batches``. The tools against real brokers:
tests/integration/test_operator_tools.py."""

from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Any

import pytest

from client.operator_admin import LogDirInfo, ReplicaInfo
from client.verbs import ProduceResult
from protocol.errors import ErrorCode
from protocol.records import iter_records
from tools import ToolError, consumer_perf, delete_records, get_offsets, log_dirs, \
    producer_perf, verifiable_consumer, verifiable_producer
from tools import record_pipeline
from tools.perf_common import Throttler, producer_settings

ALL = [log_dirs, get_offsets, delete_records, producer_perf, consumer_perf,
       verifiable_producer, verifiable_consumer]


@pytest.mark.parametrize("tool", ALL, ids=lambda t: t.__name__)
def test_help_exits_zero_with_usage(tool: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert tool.main(["--help"], stdout=out, stderr=err) == 0
    assert out.getvalue().startswith("usage: pybroker ")


@pytest.mark.parametrize("tool", ALL, ids=lambda t: t.__name__)
def test_missing_required_flags_is_a_usage_error(tool: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert tool.main([], stdout=out, stderr=err) == 2
    assert "required" in err.getvalue()


def run_tool(tool: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = tool.main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


# -- get-offsets ---------------------------------------------------------------------------

def test_get_offsets_times() -> None:
    assert [get_offsets.parse_time(t) for t in ("latest", "earliest", "max-timestamp", "-1",
                                                "-2", "-3", "1700000000000")] == \
        [-1, -2, -3, -1, -2, -3, 1700000000000]
    with pytest.raises(ToolError, match="Malformed time argument yesterday"):
        get_offsets.parse_time("yesterday")


def test_get_offsets_topic_partition_rules() -> None:
    def keep(spec: str) -> list[tuple[str, int]]:
        f = get_offsets.parse_rule(spec)
        return [(t, p) for t in ("t1", "t2", "x") for p in range(6) if f(t, p)]
    assert keep("t1:2") == [("t1", 2)]
    assert keep("t.:1-3") == [("t1", 1), ("t1", 2), ("t2", 1), ("t2", 2)]
    assert keep("x:4-") == [("x", 4), ("x", 5)]
    assert keep(":-1") == [("t1", 0), ("t2", 0), ("x", 0)]
    assert keep("t") == []                                  # the regex matches whole names
    assert len(keep("t2")) == 6
    with pytest.raises(ToolError):
        get_offsets.parse_rule("t:-")
    with pytest.raises(ToolError, match="regular expression"):
        get_offsets.parse_rule("[:1")


def test_get_offsets_flag_conflicts_and_partition_list() -> None:
    rc, _, err = run_tool(get_offsets, "--bootstrap-server", "h:1", "--topic", "a",
                          "--topic-partitions", "a:0")
    assert rc == 1 and "--topic-partitions cannot be used with --topic" in err
    rc, _, err = run_tool(get_offsets, "--bootstrap-server", "h:1", "--partitions", "0,x")
    assert rc == 1 and "--partitions" in err
    args = get_offsets.parse_args(["--bootstrap-server", "h:1", "--topic", "a.*",
                                   "--partitions", "0,2"])
    assert [args.keep("ab", p) for p in range(3)] == [True, False, True]
    assert not args.keep("ba", 0)


def test_get_offsets_output_is_sorted_as_kafka_sorts() -> None:
    lines = get_offsets.format_offsets({("t", 10): 5, ("t", 2): 7, ("s", 0): 1})
    assert lines == ["s:0:1", "t:10:5", "t:2:7"]       # by the string "topic-partition"


# -- delete-records ------------------------------------------------------------------------

def test_delete_records_json() -> None:
    text = json.dumps({"partitions": [{"topic": "t", "partition": 0, "offset": 3},
                                      {"topic": "t", "partition": 1, "offset": -1}],
                       "version": 1})
    assert delete_records.parse_offset_json(text) == {("t", 0): 3, ("t", 1): -1}
    for bad, message in [("{", "not valid JSON"), ("[]", "JSON object"),
                         ('{"version": 2, "partitions": []}', "Not supported version"),
                         ('{"version": 1}', "Missing partitions field"),
                         ('{"partitions": [{"topic": "t"}]}', "topic, partition and offset"),
                         ('{"partitions": [{"topic":"t","partition":0,"offset":1},'
                          '{"topic":"t","partition":0,"offset":2}]}', "duplicate.*t-0")]:
        with pytest.raises(ToolError, match=message):
            delete_records.parse_offset_json(bad)


def test_delete_records_missing_file_names_it(tmp_path: Any) -> None:
    rc, out, err = run_tool(delete_records, "--bootstrap-server", "h:1", "--offset-json-file",
                            str(tmp_path / "nope.json"))
    assert rc == 1 and "nope.json" in err and out == ""


def test_delete_records_result_lines() -> None:
    lines = delete_records.format_results({("t", 1): (0, 30),
                                           ("t", 0): (int(ErrorCode.OFFSET_OUT_OF_RANGE), -1)})
    assert lines[0].startswith("partition: t-0\terror: OFFSET_OUT_OF_RANGE")
    assert lines[1] == "partition: t-1\tlow_watermark: 30"


# -- log-dirs ------------------------------------------------------------------------------

def test_log_dirs_json_shape_and_topic_filter() -> None:
    dirs = {1: [LogDirInfo("/d1", 0, {("t", 1): ReplicaInfo(10, 0, False),
                                      ("u", 0): ReplicaInfo(5, 2, True)})],
            0: [LogDirInfo("/d0", int(ErrorCode.KAFKA_STORAGE_ERROR))]}
    doc = json.loads(log_dirs.as_json(dirs, {"t"}))
    assert doc == {"version": 1, "brokers": [
        {"broker": 0, "logDirs": [{"logDir": "/d0", "partitions": [],
                                   "error": "org.apache.kafka.common.errors.KafkaStorageException"}]},
        {"broker": 1, "logDirs": [{"logDir": "/d1", "error": None, "partitions": [
            {"partition": "t-1", "size": 10, "offsetLag": 0, "isFuture": False}]}]}]}
    assert len(json.loads(log_dirs.as_json(dirs, set()))["brokers"][1]["logDirs"][0]
               ["partitions"]) == 2
    assert "\n" not in log_dirs.as_json(dirs, set())


def test_log_dirs_needs_describe_and_integer_brokers() -> None:
    rc, _, err = run_tool(log_dirs, "--bootstrap-server", "h:1")
    assert rc == 1 and "describe" in err
    rc, _, err = run_tool(log_dirs, "--bootstrap-server", "h:1", "--describe",
                          "--broker-list", "0,a")
    assert rc == 1 and "--broker-list" in err


# -- producer-perf-test --------------------------------------------------------------------

def test_producer_perf_window_and_total_lines() -> None:
    out = io.StringIO()
    stats = producer_perf.Stats(10, out, now_ms=0)
    for i in range(9):
        stats.record(latency=i, size=100, now_ms=100 * i)
    assert out.getvalue() == ""
    stats.record(latency=50, size=100, now_ms=5000)          # the window closes at 5 s
    assert out.getvalue() == ("10 records sent, 2.0 records/sec (0.00 MB/sec), 8.6 ms avg "
                              "latency, 50.0 ms max latency.\n")
    total = stats.total_line(10000)
    assert total == ("10 records sent, 1.000000 records/sec (0.00 MB/sec), 8.60 ms avg "
                     "latency, 50.00 ms max latency, 5 ms 50th, 50 ms 95th, 50 ms 99th, "
                     "50 ms 99.9th.")


def test_producer_perf_samples_at_most_500000_latencies() -> None:
    stats = producer_perf.Stats(2_000_000, io.StringIO(), now_ms=0)
    assert stats.sampling == 4


def test_producer_perf_argument_errors() -> None:
    base = ["--topic", "t", "--throughput", "-1"]
    rc, _, err = run_tool(producer_perf, *base, "--num-records", "0", "--record-size", "1",
                          "--bootstrap-server", "h:1")
    assert rc == 1 and "--num-records should be greater than zero" in err
    rc, _, err = run_tool(producer_perf, *base, "--num-records", "5", "--record-size", "1")
    assert rc == 1 and "--producer-props or --producer.config" in err
    rc, _, err = run_tool(producer_perf, *base, "--num-records", "5", "--record-size", "1",
                          "--producer-props", "bootstrap.servers=h:1", "acks=2")
    assert rc == 1 and "Invalid value 2 for configuration acks" in err
    rc, _, err = run_tool(producer_perf, *base, "--num-records", "5", "--record-size", "1",
                          "--producer-props", "bootstrap.servers=h:1", "batch.size=big")
    assert rc == 1 and "batch.size" in err and "big" in err
    rc, _, err = run_tool(producer_perf, *base, "--num-records", "5", "--record-size", "1",
                          "--payload-monotonic", "--bootstrap-server", "h:1")
    assert rc == 2 and "not allowed with" in err


def test_producer_settings_defaults() -> None:
    s = producer_settings({"bootstrap.servers": "h:1"}, "perf")
    assert (s.acks, s.batch_size, s.codec, s.max_in_flight, s.client_id) == (-1, 16384, 0, 5,
                                                                              "perf")


def test_payload_file(tmp_path: Any) -> None:
    path = tmp_path / "p.txt"
    path.write_text("a\nbb\n\nccc\n")
    out = io.StringIO()
    assert producer_perf.read_payloads(str(path), "\\n", out) == [b"a", b"bb", b"ccc"]
    assert "Number of messages read: 3" in out.getvalue()
    path.write_text("")
    with pytest.raises(ToolError, match="empty file"):
        producer_perf.read_payloads(str(path), "\\n", io.StringIO())


def test_throttler() -> None:
    t = Throttler(100, start=10.0)
    assert t.delay(0, now=10.0) == 0
    assert t.delay(50, now=10.2) == pytest.approx(0.3)
    assert t.delay(50, now=11.0) == 0
    assert Throttler(-1, start=0).delay(10 ** 9, now=0) == 0


# -- the record pipeline -------------------------------------------------------------------

def test_record_pipeline_batches_rounds_and_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    sent_rounds: list[dict[tuple[str, int], bytes]] = []
    logs: dict[int, int] = {}

    async def fake_send(admin: Any, batches: dict, **kw: Any) -> dict:
        sent_rounds.append(dict(batches))
        out = {}
        for (topic, p), data in batches.items():
            n = len(list(iter_records(data)))
            out[(topic, p)] = ProduceResult(0, logs.get(p, 0))
            logs[p] = logs.get(p, 0) + n
        await asyncio.sleep(0)
        return out

    monkeypatch.setattr(record_pipeline, "send_batches", fake_send)
    acked: list[tuple[Any, int, int]] = []

    async def scenario() -> None:
        pipe = record_pipeline.RecordPipeline(
            None, "t", 3, lambda tok, p, o, e, m: acked.append((tok, p, o)),  # type: ignore
            batch_size=100, max_in_flight=2)
        for i in range(20):                     # keyed: murmur2 picks the partition
            await pipe.add(b"k%d" % (i % 4), b"v" * 20, 0, i)
        for i in range(20, 30):                 # unkeyed: sticky, 3 records per batch
            await pipe.add(None, b"v" * 20, 0, i)
        await pipe.flush()

    asyncio.run(scenario())
    assert sorted(tok for tok, _, _ in acked) == list(range(30))
    by_partition: dict[int, list[int]] = {}
    for _, p, o in acked:
        by_partition.setdefault(p, []).append(o)
    for offsets in by_partition.values():      # every partition's offsets 0..n-1, once
        assert sorted(offsets) == list(range(len(offsets)))
    assert all(len(r) <= 3 for r in sent_rounds) and len(sent_rounds) > 3


def test_record_pipeline_reports_errors_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(admin: Any, batches: dict, **kw: Any) -> dict:
        return {tp: ProduceResult(int(ErrorCode.NOT_LEADER_OR_FOLLOWER), message="moved")
                for tp in batches}
    monkeypatch.setattr(record_pipeline, "send_batches", failing)
    got: list[tuple[int, int, str | None]] = []

    async def scenario() -> None:
        pipe = record_pipeline.RecordPipeline(
            None, "t", 1, lambda tok, p, o, e, m: got.append((o, e, m)))  # type: ignore
        for i in range(3):
            await pipe.add(None, b"x", 0, i)
        await pipe.flush()

    asyncio.run(scenario())
    assert got == [(-1, int(ErrorCode.NOT_LEADER_OR_FOLLOWER), "moved")] * 3


# -- consumer-perf-test --------------------------------------------------------------------

def test_consumer_perf_header_and_lines() -> None:
    assert consumer_perf.header(False) == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    assert consumer_perf.header(True).startswith("time, threadId, data.consumed.in.MB")
    line = consumer_perf.summary_line(0, 2000, 2 * 1024 * 1024, 1000, 1000, "yyyy")
    assert line.split(", ")[2:] == ["2.0000", "1.0000", "1000", "500.0000", "1000", "1000",
                                    "2.0000", "1000.0000"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}",
                        consumer_perf.format_date(1_700_000_000_123, "yyyy-MM-dd HH:mm:ss:SSS"))
    assert consumer_perf.format_date(1_700_000_000_123, "SSS") == "123"


def test_consumer_perf_argument_errors() -> None:
    rc, _, err = run_tool(consumer_perf, "--bootstrap-server", "h:1", "--topic", "t",
                          "--messages", "0")
    assert rc == 1 and "--messages" in err
    rc, _, err = run_tool(consumer_perf, "--bootstrap-server", "h:1", "--topic", "t",
                          "--messages", "5", "--reporting-interval", "0")
    assert rc == 1 and "Reporting interval must be greater than 0." in err


# -- verifiable producer / consumer --------------------------------------------------------

def test_verifiable_events_keep_kafkas_key_order() -> None:
    line = verifiable_producer.event("producer_send_success", now_ms=5, key=None, value="1",
                                     topic="t", partition=0, offset=3)
    assert line == ('{"timestamp":5,"name":"producer_send_success","key":null,"value":"1",'
                    '"topic":"t","partition":0,"offset":3}')
    assert verifiable_producer.exception_class(int(ErrorCode.NOT_LEADER_OR_FOLLOWER)) == \
        "class org.apache.kafka.common.errors.NotLeaderOrFollowerException"
    assert verifiable_producer.value_of(3, None) == "3"
    assert verifiable_producer.value_of(3, 9) == "9.3"


def test_verifiable_producer_argument_errors(tmp_path: Any) -> None:
    conf = tmp_path / "p.properties"
    conf.write_text("acks=1\n")
    rc, _, err = run_tool(verifiable_producer, "--bootstrap-server", "h:1", "--topic", "t",
                          "--producer.config", str(conf), "--command-config", str(conf))
    assert rc == 1 and "mutually exclusive" in err
    rc, _, err = run_tool(verifiable_producer, "--bootstrap-server", "h:1", "--topic", "t",
                          "--acks", "2")
    assert rc == 2 and "invalid choice" in err


def test_verifiable_consumer_summaries_and_arguments() -> None:
    class R:
        def __init__(self, offset: int) -> None:
            self.offset = offset
    records = [("t", 1, R(5)), ("t", 0, R(0)), ("t", 1, R(6)), ("t", 0, R(1))]
    assert verifiable_consumer.summarize(records) == [  # type: ignore[arg-type]
        {"topic": "t", "partition": 1, "count": 2, "minOffset": 5, "maxOffset": 6},
        {"topic": "t", "partition": 0, "count": 2, "minOffset": 0, "maxOffset": 1}]
    base = ["--bootstrap-server", "h:1", "--topic", "t", "--group-id", "g"]
    rc, _, err = run_tool(verifiable_consumer, *base, "--reset-policy", "oldest")
    assert rc == 1 and "auto.offset.reset" in err and "oldest" in err
    rc, _, err = run_tool(verifiable_consumer, *base, "--assignment-strategy", "sticky")
    assert rc == 1 and "unsupported assignment strategy 'sticky'" in err
    rc, _, err = run_tool(verifiable_consumer, *base, "--group-protocol", "consumer")
    assert rc == 1 and "only classic" in err
    args = verifiable_consumer.parse_args(base + ["--assignment-strategy",
                                                  "org.apache.kafka.clients.consumer."
                                                  "RoundRobinAssignor"])
    assert args.assignor == "roundrobin"


def test_producer_perf_transactions_as_kafka_turns_them_on() -> None:
    base = ["--topic", "t", "--num-records", "5", "--record-size", "1", "--throughput", "-1",
            "--bootstrap-server", "h:1"]
    args = producer_perf.parse_args(base)
    assert args.transactional_id is None
    args = producer_perf.parse_args(base + ["--transaction-duration-ms", "100"])
    assert args.transactional_id.startswith("performance-producer-")
    assert args.transaction_duration_ms == 100
    args = producer_perf.parse_args(base + ["--producer-props", "transactional.id=x"])
    assert (args.transactional_id, args.transaction_duration_ms) == ("x", 3000)
    rc, _, err = run_tool(producer_perf, *base, "--transaction-duration-ms", "0")
    assert rc == 1 and "--transaction-duration-ms should be greater than zero" in err
