"""CPU per request of the broker's data-path handlers, in-process (issues 27 and 28).

What one request costs the event loop between its frame and its response's bytes,
without sockets, processes or other load: the request decoded from its frame, the
real handler on a real ReplicaManager and log (a temp dir), the response encoded.
Measured with process CPU time over many requests, so it is steady on a shared,
noisy machine where the end-to-end benchmarks (bench/request_cpu.py,
bench/txn_latency.py) move by 10 % from run to run; use it to compare two trees:

    python bench/handler_cpu.py [--requests 20000] [--runs 5]
    PYTHONPATH=<other tree> python <other tree>/bench/handler_cpu.py

Loads:
* produce: Produce v9, acks=1, one batch of 100 records of 100 B on one partition
  (what each of 500 librdkafka producers sends);
* replica fetch: a follower's incremental Fetch v12 in a fetch session over 20
  partitions, one of which got a 1 KiB batch since its last fetch (a replication
  round of a transaction: the answer carries that batch; the rest are skipped).
Figures: µs of CPU per request, medians of the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker.context import RequestContext  # noqa: E402
from broker.dispatch import REGISTRY, Outcome, load_handlers  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.codec import decode, encode, encode_chunks  # noqa: E402
from protocol.headers import RequestHeader  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from protocol.spec import api  # noqa: E402
from tests.unit.broker.replication.fakes import FakeBroker, FakeConnection  # noqa: E402

PRODUCE_VERSION = 9
FETCH_VERSION = 12
SESSION_PARTITIONS = 20


def _request(api_key: int, version: int, **fields: Any) -> bytes:
    spec = api(api_key).request
    return encode(spec.new(**fields), version)


async def _handle(broker: FakeBroker, api_key: int, version: int, frame: bytes) -> Any:
    """Decode ``frame``, run the handler, encode its response (the connection's steps)."""
    spec = api(api_key)
    request = decode(spec.request, frame, version)
    ctx = RequestContext(header=RequestHeader(api_key, version, 1, "bench"),
                         connection=FakeConnection(), broker=broker)  # type: ignore[arg-type]
    response = await REGISTRY[api_key].fn(ctx, request)
    assert not isinstance(response, Outcome), response
    return encode_chunks(response, version)


def _decoded(chunks: list[Any]) -> Any:
    """A Fetch response's encoded chunks, decoded again."""
    return decode(api(ApiKey.FETCH).response, b"".join(bytes(c) for c in chunks),
                  FETCH_VERSION)


def produce_run(work: Path, requests: int) -> float:
    """µs of CPU per Produce request."""
    broker = FakeBroker(work)
    broker.lead("t")
    s = api(ApiKey.PRODUCE).request.structs
    now = int(time.time() * 1000)
    batch = bytes(build_batch([(None, bytes(100), now) for _ in range(100)]))
    frame = _request(ApiKey.PRODUCE, PRODUCE_VERSION, transactional_id=None, acks=1,
                     timeout_ms=30_000, topic_data=[s["TopicProduceData"].new(
                         name="t", partition_data=[s["PartitionProduceData"].new(
                             index=0, records=batch)])])

    async def main() -> float:
        for _ in range(200):
            await _handle(broker, ApiKey.PRODUCE, PRODUCE_VERSION, frame)
        start = time.process_time()
        for _ in range(requests):
            await _handle(broker, ApiKey.PRODUCE, PRODUCE_VERSION, frame)
        return (time.process_time() - start) / requests * 1e6
    try:
        return asyncio.run(main())
    finally:
        broker.logs.shutdown()


def replica_fetch_run(work: Path, requests: int) -> float:
    """µs of CPU per incremental replica Fetch answering one new 1 KiB batch."""
    broker = FakeBroker(work)
    broker.lead("t", SESSION_PARTITIONS, replicas=(1, 2))
    s = api(ApiKey.FETCH).request.structs
    now = int(time.time() * 1000)
    batch = bytes(build_batch([(b"k", bytes(1000), now)]))
    appends = broker.replicas.appends

    def fetch_frame(session_id: int, epoch: int, offsets: dict[int, int]) -> bytes:
        topics = [s["FetchTopic"].new(topic="t", partitions=[s["FetchPartition"].new(
            partition=p, fetch_offset=o, current_leader_epoch=0, last_fetched_epoch=0,
            log_start_offset=0, partition_max_bytes=1 << 20) for p, o in offsets.items()])]
        return _request(ApiKey.FETCH, FETCH_VERSION, replica_id=2, max_wait_ms=0, min_bytes=1,
                        max_bytes=10 << 20, isolation_level=0, session_id=session_id,
                        session_epoch=epoch, topics=topics if offsets else [],
                        forgotten_topics_data=[], rack_id="")

    async def main() -> float:
        for p in range(SESSION_PARTITIONS):
            await appends.append_records(1, 1000, {("t", p): bytearray(batch)})
        offsets = {p: 1 for p in range(SESSION_PARTITIONS)}     # caught up everywhere
        resp = _decoded(await _handle(broker, ApiKey.FETCH, FETCH_VERSION,
                                      fetch_frame(0, 0, offsets)))
        session, epoch = resp.session_id, 1
        if session == 0:
            raise SystemExit("the leader opened no fetch session")
        elapsed = 0.0
        last: dict[int, int] = {}
        for i in range(requests + 200):
            p = i % SESSION_PARTITIONS
            await appends.append_records(1, 1000, {("t", p): bytearray(batch)})
            # the request names the partition the follower appended last round, at its
            # new position (the HW moves there: answered too); the session reads p's batch
            start = time.process_time()
            chunks = await _handle(broker, ApiKey.FETCH, FETCH_VERSION,
                                   fetch_frame(session, epoch, last))
            if i >= 200:
                elapsed += time.process_time() - start
            if i == 200:    # the load is what it says: one batch, at most one HW update
                parts = [x for t in _decoded(chunks).responses for x in t.partitions]
                if (any(x.error_code for x in parts) or len(parts) > 2
                        or sum(bool(x.records) for x in parts) != 1):
                    raise SystemExit(f"unexpected replica fetch answer: {parts}")
            offsets[p] += 1
            last = {p: offsets[p]}
            epoch += 1
        return elapsed / requests * 1e6
    try:
        return asyncio.run(main())
    finally:
        broker.logs.shutdown()


LOADS = {"produce": produce_run, "replica-fetch": replica_fetch_run}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--loads", default=",".join(LOADS))
    args = ap.parse_args()
    load_handlers()
    if not set(REGISTRY) >= {ApiKey.PRODUCE, ApiKey.FETCH}:
        raise SystemExit("the Produce / Fetch handlers are not registered")
    print(f"tree {REPO}, {args.requests} requests per run, medians of {args.runs}")
    with tempfile.TemporaryDirectory(prefix="pybroker-handler-cpu-") as tmp:
        for name in args.loads.split(","):
            runs = [LOADS[name](Path(tmp) / f"{name}-{i}", args.requests)
                    for i in range(args.runs)]
            print(f"  {name:14s} {statistics.median(runs):7.1f} µs of CPU per request   "
                  f"(runs: {', '.join(f'{r:.1f}' for r in runs)})", flush=True)
    print(f"reproduce: python {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
