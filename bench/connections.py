"""Scale of connections (issue 17): 10,000 idle connections and 1,000 active
producers on one broker.

    .venv/bin/python bench/connections.py [--runs 3] [--idle 10000] [--producers 1000]
        [--seconds 5] [--partitions 10] [--batch 10] [--record-size 100]

Each run starts a fresh ZooKeeper and broker (tests/integration/cluster.py, in a
temp dir, stopped by pid) and measures, from one asyncio (uvloop) process:

1. RSS per idle connection: one warm-up connection, then the broker's VmRSS
   (/proc/<pid>/status); ``--idle`` connections opened with our client
   (``client.KafkaConnection``: connect and the ApiVersions handshake, as every
   client does first), then left idle; after 2 s of quiet VmRSS again. Figure:
   (after - before) / connections, in KiB. The idle connections are then closed.
2. Produce with ``--producers`` connections at once, each a producer
   (``client.verbs.produce``): one batch of ``--batch`` records of
   ``--record-size`` bytes (no compression, built once), acks=1, producer i
   writing partition i mod ``--partitions``, the next Produce sent as soon as
   the answer to the last one arrives. All connect and produce once first; then
   answers are counted for ``--seconds``. Figures: records/s and MB/s (record
   values only), and the errors seen (every answer is checked). A connect that
   fails (a full listen backlog) is retried and counted.

The bench process needs an open file per connection: its soft RLIMIT_NOFILE is
raised to the hard limit (20,000 here), and so is the broker's (broker/main.py).
Figures are medians over the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._env import (Figures, command_line, create_topic, one_broker,  # noqa: E402
                        rss_kib)
from client import KafkaConnection, KafkaConnectionError  # noqa: E402
from client.verbs import produce  # noqa: E402
from protocol import records  # noqa: E402


async def open_idle(port: int, count: int) -> list[KafkaConnection]:
    conns: list[KafkaConnection] = []
    for start in range(0, count, 500):
        conns += await asyncio.gather(*(
            KafkaConnection.open("127.0.0.1", port, client_id="bench-idle", timeout=60)
            for _ in range(min(500, count - start))))
    return conns


async def idle_run(port: int, pid: int, count: int) -> float:
    """KiB of broker RSS per idle connection."""
    warm = await open_idle(port, 1)
    await asyncio.sleep(1.0)
    before = rss_kib(pid)["VmRSS"]
    conns = await open_idle(port, count)
    await asyncio.sleep(2.0)
    after = rss_kib(pid)["VmRSS"]
    print(f"  idle: {count} connections open; broker VmRSS {before / 1024:.1f} MiB -> "
          f"{after / 1024:.1f} MiB", flush=True)
    await asyncio.gather(*(c.close() for c in conns + warm))
    await asyncio.sleep(1.0)
    return (after - before) / count


async def produce_run(port: int, topic: str, args: argparse.Namespace) -> dict[str, float]:
    batch = bytes(records.build_batch([(None, bytes(args.record_size),
                                        int(time.time() * 1000))] * args.batch))
    counting = False
    done = 0
    errors: dict[int, int] = {}
    stop = asyncio.Event()
    reconnects = 0

    async def send(conn: KafkaConnection, tp: tuple[str, int]) -> None:
        result = await produce(conn, {tp: batch}, acks=1, timeout_ms=30000)
        assert result is not None
        code = result[tp].error
        if code:
            errors[code] = errors.get(code, 0) + 1

    async def connect(tp: tuple[str, int]) -> KafkaConnection:
        """Connect and produce once; a refused or reset connection (a full listen
        backlog) is retried, as a client would, and counted."""
        nonlocal reconnects
        for attempt in range(10):
            conn = None
            try:
                conn = await KafkaConnection.open("127.0.0.1", port, client_id="bench",
                                                  timeout=30)
                await send(conn, tp)
                return conn
            except (OSError, KafkaConnectionError):
                if conn is not None:
                    await conn.close()
                reconnects += 1
                await asyncio.sleep(0.2 * (attempt + 1))
        raise RuntimeError("could not connect a producer in 10 attempts")

    async def producer(i: int, ready: asyncio.Future[None]) -> None:
        nonlocal done
        tp = (topic, i % args.partitions)
        try:
            conn = await connect(tp)
        except Exception as e:
            ready.set_exception(e)
            return
        try:
            ready.set_result(None)
            while not stop.is_set():
                await send(conn, tp)
                if counting:
                    done += 1
        finally:
            await conn.close()

    loop = asyncio.get_running_loop()
    readies = [loop.create_future() for _ in range(args.producers)]
    tasks = []
    for start in range(0, args.producers, 200):        # connect in waves of 200
        tasks += [asyncio.create_task(producer(i, readies[i]))
                  for i in range(start, min(start + 200, args.producers))]
        await asyncio.sleep(0.05)
    await asyncio.wait_for(asyncio.gather(*readies), 120)
    counting = True
    started = time.perf_counter()
    await asyncio.sleep(args.seconds)
    counting = False
    elapsed = time.perf_counter() - started
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    rate = done / elapsed
    return {"requests_s": rate, "records_s": rate * args.batch,
            "mb_s": rate * args.batch * args.record_size / 1e6,
            "errors": float(sum(errors.values())), "reconnects": float(reconnects)}


def one_run(args: argparse.Namespace) -> dict[str, float]:
    with one_broker() as broker:
        assert broker.pid is not None
        topic = create_topic(broker.bootstrap, args.partitions, prefix="conns")
        loop_factory = _loop_factory()
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            per_conn = runner.run(idle_run(broker.port, broker.pid, args.idle))
            produced = runner.run(produce_run(broker.port, topic, args))
        rss = rss_kib(broker.pid)["VmRSS"] / 1024
    print(f"  run: {per_conn:.2f} KiB per idle connection; {args.producers} producers: "
          f"{produced['records_s']:,.0f} records/s, {produced['mb_s']:.2f} MB/s "
          f"({produced['requests_s']:,.0f} Produce/s), errors {produced['errors']:.0f}, "
          f"connections retried {produced['reconnects']:.0f}; "
          f"broker VmRSS at the end {rss:.0f} MiB", flush=True)
    return {"kib_per_idle_connection": per_conn, **produced}


def _loop_factory():  # type: ignore[no-untyped-def]
    try:
        import uvloop
        return uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle", type=int, default=10_000)
    ap.add_argument("--producers", type=int, default=1_000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--batch", type=int, default=10, help="records per Produce")
    ap.add_argument("--record-size", type=int, default=100)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = max(args.idle, args.producers) + 200
    if hard < need:
        sys.exit(f"the open-file limit ({hard}) is below the {need} this bench needs")
    results = []
    for i in range(args.runs):
        print(f"run {i + 1} of {args.runs}:", flush=True)
        results.append(one_run(args))
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(f"\nmedian of {args.runs} runs:")
    figures = Figures({}, width=34)
    figures.report(f"RSS per idle connection ({args.idle})", med["kib_per_idle_connection"],
                   "KiB")
    figures.report(f"produce, {args.producers} producers", med["records_s"], "records/s")
    figures.report(f"produce, {args.producers} producers", med["mb_s"], "MB/s",
                   f"({args.batch} x {args.record_size} B records per Produce, acks=1, "
                   f"{args.partitions} partitions)")
    figures.report("Produce requests", med["requests_s"], "/s")
    figures.report("produce errors (all runs)", sum(r["errors"] for r in results), "")
    figures.report("connects retried (all runs)", sum(r["reconnects"] for r in results), "")
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
