"""Broker CPU per Produce request, over many connections (issue 28's 500-connection load).

With many producer connections each request carries a small batch, and the broker's
event loop, not the record path, is the bound: what counts is the CPU the broker spends
per request from the bytes in to the response out (framing, header and body decode,
quotas, the handler, the append, the response's encode and send). This measures it
without a C client: the requests are encoded once, so the Python client here only
writes bytes and counts the answers (it is not what is measured).

    python bench/request_cpu.py [--connections 100] [--requests 40000] [--records 100]
                                [--size 100] [--in-flight 2] [--runs 3]

One broker, one partition, acks=1, Produce v9 with one uncompressed batch of
``--records`` records of ``--size`` bytes (about what librdkafka sends from each of 500
producers at linger 5 ms). Figure: the broker's utime + stime over the run / requests
answered, in µs, and its user part (the kernel's share moves with the page cache and
the VM; medians of runs), and the request rate the one Python client reached.
Compare two trees by running each one's copy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import time

from _env import cpu_seconds, create_topic, one_broker  # type: ignore[import-not-found]

from protocol.api_keys import ApiKey
from protocol.headers import RequestHeader, decode_response, encode_request
from protocol.records import build_batch
from protocol.spec import api

VERSION = 9


def produce_frame(topic: str, records: int, size: int, correlation_id: int) -> bytes:
    """One size-prefixed Produce request: acks=1, one batch on partition 0."""
    now = int(time.time() * 1000)
    batch = bytes(build_batch([(None, bytes(size), now) for _ in range(records)]))
    spec = api(ApiKey.PRODUCE).request
    part = spec.structs["PartitionProduceData"].new(index=0, records=batch)
    data = spec.structs["TopicProduceData"].new(name=topic, partition_data=[part])
    body = spec.new(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[data])
    frame = encode_request(RequestHeader(ApiKey.PRODUCE, VERSION, correlation_id, "bench"), body)
    return struct.pack(">i", len(frame)) + frame


def check(answer: bytes) -> None:
    """The first answer of each connection must be a success."""
    _, body = decode_response(ApiKey.PRODUCE, VERSION, answer)
    error = body.responses[0].partition_responses[0].error_code
    if error:
        raise SystemExit(f"the broker answered Produce with error {error}")


async def one_connection(port: int, frame: bytes, requests: int, in_flight: int) -> None:
    """Send ``requests`` copies of ``frame``, at most ``in_flight`` unanswered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = answered = 0
    try:
        while answered < requests:
            while sent < requests and sent - answered < in_flight:
                writer.write(frame)
                sent += 1
            await writer.drain()
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            answer = await reader.readexactly(size)
            if answered == 0:
                check(answer)
            answered += 1
    finally:
        writer.close()


async def load(port: int, frame: bytes, connections: int, per_connection: int,
               in_flight: int) -> None:
    await asyncio.gather(*(one_connection(port, frame, per_connection, in_flight)
                           for _ in range(connections)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--requests", type=int, default=40_000, help="in all, per run")
    ap.add_argument("--records", type=int, default=100, help="records per request")
    ap.add_argument("--size", type=int, default=100, help="value bytes")
    ap.add_argument("--in-flight", type=int, default=2, help="per connection")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    per_connection = max(1, args.requests // args.connections)
    total = per_connection * args.connections
    with one_broker() as b:
        pid = b.pid
        assert pid is not None
        topic = create_topic(b.bootstrap, 1, "bench-request-cpu")
        frame = produce_frame(topic, args.records, args.size, 7)
        asyncio.run(load(b.port, frame, 4, 200, args.in_flight))     # warm-up
        per_request, user, rates = [], [], []
        for i in range(args.runs):
            (u0, s0), t0 = cpu_seconds(pid), time.perf_counter()
            asyncio.run(load(b.port, frame, args.connections, per_connection, args.in_flight))
            elapsed = time.perf_counter() - t0
            u1, s1 = cpu_seconds(pid)
            per_request.append((u1 - u0 + s1 - s0) / total * 1e6)
            user.append((u1 - u0) / total * 1e6)
            rates.append(total / elapsed)
            print(f"run {i + 1}: {per_request[-1]:.1f} µs of broker CPU per request "
                  f"(user {user[-1]:.1f}), {rates[-1]:,.0f} requests/s", flush=True)
    print(f"broker CPU per Produce request ({args.records} x {args.size} B, acks=1, "
          f"{args.connections} connections): {statistics.median(per_request):.1f} µs, "
          f"user {statistics.median(user):.1f} µs "
          f"(medians of {args.runs}; runs: {', '.join(f'{x:.1f}' for x in per_request)}); "
          f"client reached {statistics.median(rates):,.0f} requests/s")
    print(f"reproduce: python {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
