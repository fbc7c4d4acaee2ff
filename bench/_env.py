"""Shared by the broker benchmarks: a ZooKeeper and one broker process (or a cluster of
N, ``cluster``), started with the integration-test harness (tests/integration/cluster.py)
under a temp dir and stopped by pid on exit; or an existing broker given with --bootstrap.
Broker settings from the command line (``add_broker_config_option``: a repeatable
``--broker-config key=value``). The topic chores the confluent-kafka benchmarks share
(create_topic, delete_topic, stored_records), percentiles, and the Java client's
classpath for the one-file Java programs under bench/."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration.cluster import BrokerProcess, Cluster  # noqa: E402
from tests.integration.zookeeper import zookeeper_server  # noqa: E402


@contextlib.contextmanager
def zookeeper(work: Path) -> Iterator[str]:
    with zookeeper_server(work / "zk") as connect:
        yield connect


@contextlib.contextmanager
def cluster(size: int, overrides: dict[str, str] | None = None,
            listeners: tuple[str, ...] = (), keep: Path | None = None) -> Iterator[Cluster]:
    """ZooKeeper + ``size`` brokers in a fresh temp dir (removed afterwards; with ``keep``,
    a new directory under ``keep`` that stays, logs and all), every process stopped by
    pid on the way out. ``overrides`` go on top of the harness's defaults and
    ``auto.create.topics.enable=false``, ``log.level=WARN``."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (tempfile.TemporaryDirectory(prefix="pybroker-bench-") if keep is None else
          contextlib.nullcontext(tempfile.mkdtemp(prefix="pybroker-bench-", dir=keep))) as tmp:
        work = Path(tmp)
        with zookeeper(work) as zk:
            c = Cluster(zk, work, size=size, listeners=listeners, overrides={
                "auto.create.topics.enable": "false", "log.level": "WARN", **(overrides or {})})
            c.start()
            try:
                yield c
            finally:
                c.stop()


@contextlib.contextmanager
def one_broker(overrides: dict[str, str] | None = None,
               listeners: tuple[str, ...] = ()) -> Iterator[BrokerProcess]:
    """ZooKeeper + one broker in a fresh temp dir (removed afterwards). ``listeners``:
    names of listeners it opens beside PLAINTEXT, each on a port of its own
    (``BrokerProcess.extra_listeners``), set up by ``overrides``."""
    with cluster(1, overrides, listeners) as c:
        yield c.brokers[0]


def add_broker_config_option(ap: argparse.ArgumentParser) -> None:
    """``--broker-config key=value`` (repeatable): a broker setting for the brokers the
    benchmark starts, on top of its own (read back with ``broker_configs``)."""
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for the brokers started here (repeatable), "
                         "e.g. transaction.end.await.markers=false")


def broker_configs(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in args.broker_config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--broker-config wants key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of every thread of ``pid`` so far, in seconds (fields 14, 15 of
    /proc/pid/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / RssAnon / RssFile of a process, in KiB (Linux /proc)."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(rest.split()[0])
    return out


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def java_classpath() -> str:
    """The Java client's classpath (kafka-clients 3.9.1; fetched on first use by
    tests/oracle/install_java_client.py) for ``java -cp CP bench/Program.java``."""
    from tests.oracle.install_java_client import classpath
    return classpath()


def command_line() -> str:
    return " ".join([".venv/bin/python", os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]])


class Figures:
    """The figures a benchmark prints, each against its target if it has one:
    ``targets`` maps a figure's name to (">=" or "<=", target)."""

    def __init__(self, targets: dict[str, tuple[str, float]], width: int = 24) -> None:
        self.targets = targets
        self.width = width
        self.values: dict[str, float] = {}

    def report(self, name: str, value: float, unit: str, extra: str = "") -> None:
        self.values[name] = value
        op, target = self.targets.get(name, ("", None))
        verdict = ""
        if target is not None:
            ok = value >= target if op == ">=" else value <= target
            verdict = f"  [target {op} {target:g} {unit}: {'met' if ok else 'NOT met'}]"
        print(f"{name:<{self.width}} {value:12.3f} {unit}{verdict} {extra}", flush=True)


# -- topics, through confluent-kafka's admin client -------------------------------------------

def create_topic(bootstrap: str, partitions: int = 1, prefix: str = "bench",
                 replication_factor: int = 1, configs: dict[str, str] | None = None) -> str:
    """A fresh topic (replication factor 1 unless told) named ``<prefix>-<random>``."""
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result
    admin.create_topics([NewTopic(topic, partitions, replication_factor,
                                  config=configs or {})])[topic].result(30)
    time.sleep(0.5)  # leadership through the controller
    return topic


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)


def drain(consumer: Any, count: int, limit_s: float = 120.0) -> None:
    """Consume exactly ``count`` records with an assigned confluent-kafka consumer
    (never asking for more than is left: consume() would wait for them), failing
    on any error but end-of-partition or after ``limit_s``."""
    from confluent_kafka import KafkaError
    seen, deadline = 0, time.perf_counter() + limit_s
    while seen < count:
        for m in consumer.consume(min(10000, count - seen), 1.0):
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"consume: {m.error()}")
                continue
            seen += 1
        if time.perf_counter() > deadline:
            raise RuntimeError(f"consume: {seen} of {count} in {limit_s:g} s")


def stored_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Sum of the partitions' high watermarks, read_uncommitted (markers included)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in range(partitions))
    finally:
        c.close()
