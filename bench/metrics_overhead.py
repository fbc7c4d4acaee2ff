"""What Prometheus metrics cost the data path: produce and consume throughput of a
broker with ``prometheus.listener`` set and scraped every second, against the same
broker build without it.

Target (issue 18): with metrics >= 0.95x without, for produce and for consume.

    python bench/metrics_overhead.py [--runs 3] [--records 100000]

One ZooKeeper, two one-broker clusters (own chroots), one with metrics on and a
thread scraping it every second (each scrape read in full), one without. Each
round runs both, off then on, the next on then off, so that drift on a shared
machine hits both alike; each run
is bench/produce_consume.py's produce (1 KiB records, acks=1, linger.ms=5, one
partition, a fresh topic) then its consume. Figures: medians over the rounds, and
the ratios on / off. On a shared machine throughput swings by tens of percent
between rounds, so the broker's own CPU time per MB (utime + stime from /proc,
scrapes included) is reported too: the steadier measure of what metrics cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path

from _env import (Figures, command_line, create_topic, delete_topic,  # type: ignore[import-not-found]  # noqa: E501
                  zookeeper)
from produce_consume import consume, produce  # type: ignore[import-not-found]

from tests.integration.cluster import Cluster
from tests.integration.zookeeper import free_port

TARGETS = {"produce_ratio": (">=", 0.95), "consume_ratio": (">=", 0.95)}


def scraper(port: int, stop: threading.Event, counts: list[int]) -> None:
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                r.read()
            counts[0] += 1
        except OSError as e:
            print(f"  scrape failed: {e}", flush=True)


def cpu_s(pid: int) -> float:
    """utime + stime of a process, in seconds (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=100_000)
    args = ap.parse_args()
    print(f"$ {command_line()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="pybroker-bench-") as tmp:
        work = Path(tmp)
        with zookeeper(work) as zk:
            metrics_port = free_port()
            base = {"auto.create.topics.enable": "false", "log.level": "WARN"}
            off = Cluster(zk, work / "off", overrides=base)
            on = Cluster(zk, work / "on", overrides={
                **base, "prometheus.listener": f"127.0.0.1:{metrics_port}"})
            off.start()
            on.start()
            stop, scrapes = threading.Event(), [0]
            t = threading.Thread(target=scraper, args=(metrics_port, stop, scrapes))
            t.start()
            results: dict[str, dict[str, list[float]]] = {
                k: {"produce": [], "consume": [], "cpu": []} for k in ("off", "on")}
            try:
                for run in range(args.runs):
                    order = [("off", off), ("on", on)]
                    for name, cluster in (order if run % 2 == 0 else order[::-1]):
                        boot = cluster.bootstrap
                        pid = cluster.brokers[0].pid
                        assert pid is not None
                        topic = create_topic(boot)
                        cpu0 = cpu_s(pid)
                        p = produce(boot, topic, args.records)
                        c = consume(boot, topic, args.records)
                        cpu_per_mb = (cpu_s(pid) - cpu0) * 1000 / (2 * args.records * 1024 / 1e6)
                        delete_topic(boot, topic)
                        results[name]["produce"].append(p)
                        results[name]["consume"].append(c)
                        results[name]["cpu"].append(cpu_per_mb)
                        print(f"  run {run + 1} metrics {name:>3}: produce {p:7.1f} MB/s, "
                              f"consume {c:7.1f} MB/s, broker CPU {cpu_per_mb:.2f} ms/MB",
                              flush=True)
            finally:
                stop.set()
                t.join()
                on.stop()
                off.stop()
    figures = Figures(TARGETS)
    med = {k: {op: statistics.median(v) for op, v in d.items()} for k, d in results.items()}
    for op in ("produce", "consume"):
        figures.report(f"{op}_off_MBps", med["off"][op], "MB/s")
        figures.report(f"{op}_on_MBps", med["on"][op], "MB/s")
        figures.report(f"{op}_ratio", med["on"][op] / med["off"][op], "x",
                       "(metrics on and scraped every second / off)")
    figures.report("cpu_off_ms_per_MB", med["off"]["cpu"], "ms/MB")
    figures.report("cpu_on_ms_per_MB", med["on"]["cpu"], "ms/MB")
    figures.report("cpu_ratio", med["on"]["cpu"] / med["off"]["cpu"], "x",
                   "(broker CPU per MB produced+consumed, on / off)")
    print(f"({scrapes[0]} scrapes during the runs; medians over {args.runs} rounds of "
          f"{args.records} x 1 KiB)", flush=True)


if __name__ == "__main__":
    main()
