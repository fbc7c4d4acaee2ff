"""How long one Prometheus scrape of a broker hosting 10,000 partitions takes.

Target (issue 18): one scrape <= 1 s.

    python bench/metrics_scrape.py [--partitions 10000] [--scrapes 7]

A ZooKeeper and one broker with ``prometheus.listener`` set; one topic of
``--partitions`` partitions (RF 1) is created through confluent-kafka's admin
client and the broker is waited for until its scrape says it hosts them all
(kafka_server_replicamanager_partitioncount). Then ``--scrapes`` scrapes, each
timed from the HTTP request to the last byte of the answer (as Prometheus sees
it; the gzip'd and the plain answer both). Figures: the median and the worst, the
answer's size and sample count. Every partition contributes its log gauges
(size, segments, LEO, log start, HW) and, as a leader, its Partition gauges.
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.request

from _env import Figures, command_line, one_broker  # type: ignore[import-not-found]

from tests.integration.zookeeper import free_port

TARGETS = {"scrape_median_s": ("<=", 1.0), "scrape_gzip_median_s": ("<=", 1.0)}


def scrape(port: int, gzip: bool = False) -> tuple[float, bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                 headers={"Accept-Encoding": "gzip"} if gzip else {})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        body = r.read()
    return time.perf_counter() - start, body


def partition_count(port: int) -> int:
    _, body = scrape(port)
    for line in body.decode().splitlines():
        if line.startswith("kafka_server_replicamanager_partitioncount "):
            return int(float(line.split()[1]))
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--scrapes", type=int, default=7)
    args = ap.parse_args()
    print(f"$ {command_line()}", flush=True)
    port = free_port()
    with one_broker({"prometheus.listener": f"127.0.0.1:{port}"}) as broker:
        from confluent_kafka.admin import AdminClient, NewTopic
        t0 = time.monotonic()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("scrape-big", args.partitions, 1)],
                            request_timeout=600)["scrape-big"].result(600)
        while partition_count(port) < args.partitions:
            if time.monotonic() - t0 > 600:
                raise RuntimeError("the broker did not host every partition in 600 s")
            time.sleep(1.0)
        print(f"  ({args.partitions} partitions hosted after {time.monotonic() - t0:.1f} s)",
              flush=True)
        plain = [scrape(port) for _ in range(args.scrapes)]
        zipped = [scrape(port, gzip=True) for _ in range(args.scrapes)]
    body = plain[-1][1].decode()
    samples = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
    figures = Figures(TARGETS)
    figures.report("scrape_median_s", statistics.median(t for t, _ in plain), "s",
                   f"(worst {max(t for t, _ in plain):.3f} s; {len(plain[-1][1]) / 1e6:.1f} MB, "
                   f"{samples} samples)")
    figures.report("scrape_gzip_median_s", statistics.median(t for t, _ in zipped), "s",
                   f"(worst {max(t for t, _ in zipped):.3f} s; "
                   f"{len(zipped[-1][1]) / 1e6:.2f} MB gzip'd)")


if __name__ == "__main__":
    main()
