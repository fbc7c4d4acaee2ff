"""Codec benchmark: decode a Produce request carrying one 16 KiB batch, and
encode a Fetch response carrying one, without copying the record bytes.

Targets (issue 2): each at most 20 µs median on this machine.

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

from protocol.headers import RequestHeader, decode_request, encode_request, encode_response  # noqa: E402
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
    cmd = f"python bench/codec.py --rounds {args.rounds}"
    print(f"decode Produce v{args.produce_version} request, one 16 KiB batch: "
          f"median {dec_med:.2f} us, p90 {dec_p90:.2f} us (target <= 20 us)")
    print(f"encode Fetch v{args.fetch_version} response, one 16 KiB batch: "
          f"median {enc_med:.2f} us, p90 {enc_p90:.2f} us (target <= 20 us)")
    print(f"reproduce: {cmd}")


if __name__ == "__main__":
    main()
