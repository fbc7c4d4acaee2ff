"""Codec benchmark: decode a Produce request carrying one 16 KiB batch, and
encode a Fetch response carrying one, without copying the record bytes; and
the codec's share of one replica fetch (issue 28's per-request cost): a
follower's incremental Fetch v12 of one partition encoded and decoded, the
leader's answer with one 1 KiB batch encoded and decoded (the four steps of
one round trip, as the follower and the leader run them; the answer's chunks
are joined into one bytes, as the follower receives them, inside the figure).

Targets (issue 2): the first two each at most 20 µs median on this machine.

    python bench/codec.py [--rounds N]

Prints the median, p90 and the command that reproduces the figures. The
zero-copy claim is checked, not assumed: the decoded records field must be a
view into the request frame, and the encoded response's chunks must contain
the very batch object that was passed in.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.headers import (RequestHeader, decode_request, decode_response,  # noqa: E402
                              encode_request, encode_response)
from protocol.spec import api  # noqa: E402

BATCH = os.urandom(16 * 1024)


def _produce_frame(version: int) -> bytes:
    spec = api(0).request
    topic = spec.structs["TopicProduceData"]
    part = spec.structs["PartitionProduceData"]
    body = spec.new(acks=-1, timeout_ms=30000, topic_data=[
        topic.new(name="bench-topic", partition_data=[part.new(index=0, records=BATCH)])])
    return encode_request(RequestHeader(0, version, 1, "bench"), body)


def _fetch_response(version: int):  # type: ignore[no-untyped-def]
    spec = api(1).response
    topic = spec.structs["FetchableTopicResponse"]
    part = spec.structs["PartitionData"]
    body = spec.new(responses=[topic.new(
        topic="bench-topic", partitions=[part.new(partition_index=0, high_watermark=100,
                                                  last_stable_offset=100, records=BATCH)])])
    return body


def _replica_fetch_round_trip(version: int):  # type: ignore[no-untyped-def]
    """The four codec steps of one replica fetch of one partition at ``version``."""
    req_spec, resp_spec = api(1).request, api(1).response
    rs = req_spec.structs
    request = req_spec.new(
        replica_id=1, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, session_id=7,
        session_epoch=3, topics=[rs["FetchTopic"].new(topic="bench-topic", partitions=[
            rs["FetchPartition"].new(partition=0, current_leader_epoch=2, fetch_offset=1000,
                                     last_fetched_epoch=2, log_start_offset=0,
                                     partition_max_bytes=1 << 20)])])
    ps = resp_spec.structs
    response = resp_spec.new(session_id=7, responses=[ps["FetchableTopicResponse"].new(
        topic="bench-topic", partitions=[ps["PartitionData"].new(
            partition_index=0, high_watermark=1000, last_stable_offset=1000,
            log_start_offset=0, records=BATCH[:1024])])])
    header = RequestHeader(1, version, 1, "broker-1-fetcher")

    def round_trip() -> None:
        frame = encode_request(header, request)
        decode_request(frame)
        chunks = encode_response(1, version, 1, response)
        decode_response(1, version, b"".join(bytes(c) for c in chunks))
    return round_trip


def _median_us(fn, rounds: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    for _ in range(200):
        fn()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--produce-version", type=int, default=11)
    ap.add_argument("--fetch-version", type=int, default=16)
    args = ap.parse_args()

    frame = _produce_frame(args.produce_version)
    _, req = decode_request(frame)
    records = req.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is not None, "records were copied"
    assert bytes(records) == BATCH

    resp = _fetch_response(args.fetch_version)
    chunks = encode_response(1, args.fetch_version, 1, resp)
    assert any(c is BATCH for c in chunks), "record bytes were copied on encode"

    dec_med, dec_p90 = _median_us(lambda: decode_request(frame), args.rounds)
    enc_med, enc_p90 = _median_us(
        lambda: encode_response(1, args.fetch_version, 1, resp), args.rounds)
    rt_med, rt_p90 = _median_us(_replica_fetch_round_trip(12), args.rounds)
    cmd = f"python bench/codec.py --rounds {args.rounds}"
    print(f"decode Produce v{args.produce_version} request, one 16 KiB batch: "
          f"median {dec_med:.2f} us, p90 {dec_p90:.2f} us (target <= 20 us)")
    print(f"encode Fetch v{args.fetch_version} response, one 16 KiB batch: "
          f"median {enc_med:.2f} us, p90 {enc_p90:.2f} us (target <= 20 us)")
    print(f"replica fetch v12 round trip, one partition, one 1 KiB batch (encode + decode "
          f"of request and response): median {rt_med:.2f} us, p90 {rt_p90:.2f} us")
    print(f"reproduce: {cmd}")


if __name__ == "__main__":
    main()
