"""Throughput over TLS and SASL_SSL against PLAINTEXT on one broker, driven by
confluent-kafka (librdkafka), and connections per second with SCRAM-SHA-512,
driven by our client.

Target (issue 15): TLS >= 0.5x plaintext for produce and for consume (SASL_SSL
carries its data over the same TLS and is held to the same target).

    python bench/security.py [--runs 3] [--records 300000] [--size 1024]
                             [--partitions 1] [--connections 300] [--concurrency 8]
                             [--bootstrap H:P --ssl H:P --sasl-ssl H:P
                              --sasl-plaintext H:P --ca ca.pem]

Without --bootstrap a ZooKeeper and a broker are started in a temp dir with four
listeners (PLAINTEXT, SSL, SASL_SSL and SASL_PLAINTEXT, both SASL ones with
SCRAM-SHA-512 only), its certificate made with the ``openssl`` command under a
temp dir of its own (a throwaway CA, RSA 2048, SAN IP:127.0.0.1; clients check the
host name). With --bootstrap (a PLAINTEXT listener) the other listeners are given
as shown. Either way the user ``--user`` gets its SCRAM-SHA-512 credential
(4096 iterations) through AlterUserScramCredentials on the PLAINTEXT listener.

1. Throughput, per mode PLAINTEXT / SSL / SASL_SSL, the modes in a rotating order
   within each run (so drift in the machine's load hits them alike), each on a
   fresh topic of ``--partitions`` partitions:

   - produce: ``--records`` values of ``--size`` bytes (no key), acks=all,
     linger.ms=5, no compression, a 16 MiB producer queue (delivery-bound). One
     record is produced and flushed first (connection, TLS and SASL handshakes
     not timed); MB/s = payload bytes / time from the first timed produce() to
     the end of flush().
   - consume: a fresh consumer (no group) assigned every partition from offset 0,
     its connection made first by a Metadata request (not timed); MB/s = payload
     bytes / time from assign() to the last record. The topic is checked to hold
     exactly the records sent, then deleted.

   Reported: MB/s medians over the runs and the ratio mode / PLAINTEXT of the
   medians; with a broker we started, also the broker's CPU seconds per 100 MB
   (utime + stime from /proc), which does not depend on how the machine's CPUs
   are shared between the broker and the client.
2. Connections per second, per mode PLAINTEXT / SSL / SASL_PLAINTEXT / SASL_SSL:
   ``KafkaConnection.open`` (TCP, TLS when the mode has it, ApiVersions, then
   SaslHandshake + the two SCRAM-SHA-512 SaslAuthenticate rounds when SASL), then
   ``close()`` in a task of its own, so that the next open does not wait for it;
   ``--connections`` of them one after another, and again with ``--concurrency``
   tasks opening them concurrently on one event loop (the client is one process:
   its CPU per connection is printed too). Each TLS connection is a full handshake
   (no session resumption). Over TLS ``close()`` sends close_notify and waits for
   the broker's; it gives up after ``CLOSE_WAIT`` and resets the connection: how
   many closes did so is printed per run (a broker that never answers close_notify
   shows them all). Reported: connections/s medians; with a broker we started, the
   broker's CPU ms per connection.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import ssl
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _env import (Figures, command_line, create_topic, delete_topic,  # type: ignore[import-not-found]  # noqa: E501
                  drain, one_broker, stored_records)

from client.connection import KafkaConnection
from client.security import ClientSecurity
from tests.integration.security.certs import make_pki

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

MB = 1_000_000
DATA_MODES = ("PLAINTEXT", "SSL", "SASL_SSL")
CONNECT_MODES = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
EXTRA_LISTENERS = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISM = "SCRAM-SHA-512"
ITERATIONS = 4096
TICK = os.sysconf("SC_CLK_TCK")
CLOSE_WAIT = 2.0     # s a close() waits for the broker's side of the TLS shutdown


@dataclass(frozen=True)
class Endpoints:
    """Where each mode connects, whom to trust, who we are, and the broker's pid
    (None for a broker we did not start: no CPU figures)."""

    bootstrap: dict[str, str]          # mode -> "host:port"
    ca: str
    user: str
    password: str
    pid: int | None = None

    def rdkafka(self, mode: str) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap[mode],
                                "security.protocol": mode}
        if mode in ("SSL", "SASL_SSL"):
            conf["ssl.ca.location"] = self.ca
        if mode.startswith("SASL"):
            conf.update({"sasl.mechanisms": MECHANISM, "sasl.username": self.user,
                         "sasl.password": self.password})
        return conf

    def ours(self, mode: str) -> ClientSecurity:
        ctx = ssl.create_default_context(cafile=self.ca) if mode in ("SSL", "SASL_SSL") \
            else None
        if not mode.startswith("SASL"):
            return ClientSecurity(protocol=mode, ssl_context=ctx)
        return ClientSecurity(protocol=mode, ssl_context=ctx, sasl_mechanism=MECHANISM,
                              sasl_username=self.user, sasl_password=self.password)

    def broker_cpu(self) -> float:
        """The broker's user + system CPU seconds so far; 0 when it is not ours."""
        if self.pid is None:
            return 0.0
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK


def broker_overrides(keystore: str, ca: str) -> dict[str, str]:
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="bench" password="bench-secret";')
    return {
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": keystore,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": ca,
        **{f"listener.name.{name}.{key}": value
           for name in ("sasl_ssl", "sasl_plaintext")
           for key, value in (("sasl.enabled.mechanisms", MECHANISM),
                              (f"{MECHANISM.lower()}.sasl.jaas.config", jaas))},
    }


def upsert_scram_user(bootstrap: str, user: str, password: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, ITERATIONS)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, info, password.encode())])
    futures[user].result(30)


# -- 1. throughput -------------------------------------------------------------------------








def produce(conf: dict[str, Any], topic: str, n: int, size: int) -> float:
    p = Producer({**conf, "linger.ms": 5, "acks": "all", "compression.type": "none",
                  "queue.buffering.max.kbytes": 16 * 1024,
                  "queue.buffering.max.messages": 100_000})
    value = bytes(size)
    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    def one() -> None:
        while True:
            try:
                p.produce(topic, value, on_delivery=report)
                return
            except BufferError:
                p.poll(0.001)

    one()                         # warm-up, not timed: connection and handshakes
    if p.flush(30) or errors:
        raise RuntimeError(f"produce warm-up failed: {errors[:1]}")
    start = time.perf_counter()
    for _ in range(n):
        one()
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left or errors:
        raise RuntimeError(f"produce: {left} undelivered, {len(errors)} failed ({errors[:1]})")
    return n * size / elapsed / MB


def consume(conf: dict[str, Any], topic: str, partitions: int, n: int, size: int) -> float:
    """MB/s reading ``n`` records (the warm-up record is read too, not counted)."""
    c = Consumer({**conf, "group.id": "bench-unused", "enable.auto.commit": False,
                  "fetch.max.bytes": 64 * 1024 * 1024,
                  "max.partition.fetch.bytes": 16 * 1024 * 1024,
                  "queued.max.messages.kbytes": 512 * 1024})
    try:
        c.list_topics(topic, timeout=30)   # connection and handshakes, not timed
        start = time.perf_counter()
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        drain(c, n + 1)          # the records and the warm-up one
        return n * size / (time.perf_counter() - start) / MB
    finally:
        c.close()


@dataclass
class Throughput:
    produce: float          # MB/s
    consume: float
    produce_cpu: float      # broker CPU s per 100 MB
    consume_cpu: float


def throughput(ep: Endpoints, mode: str, args: argparse.Namespace) -> Throughput:
    plain = ep.bootstrap["PLAINTEXT"]
    topic = create_topic(plain, args.partitions, "bench-sec")
    payload = args.records * args.size / MB / 100       # in 100 MB
    cpu0 = ep.broker_cpu()
    prod = produce(ep.rdkafka(mode), topic, args.records, args.size)
    cpu1 = ep.broker_cpu()
    cons = consume(ep.rdkafka(mode), topic, args.partitions, args.records, args.size)
    cpu2 = ep.broker_cpu()
    stored = stored_records(plain, topic, args.partitions) - 1   # the warm-up
    if stored != args.records:
        raise RuntimeError(f"{mode}: {stored} records stored, {args.records} sent")
    delete_topic(plain, topic)
    return Throughput(prod, cons, (cpu1 - cpu0) / payload, (cpu2 - cpu1) / payload)


# -- 2. connections per second -------------------------------------------------------------


async def connect_rate(host: str, port: int, security: ClientSecurity, n: int,
                       concurrency: int) -> tuple[float, list[float]]:
    """Connections/s opening ``n`` connections, ``concurrency`` at a time, each closed
    at once by a task of its own; -> (rate, each close's seconds)."""
    todo = iter(range(n))
    closes: list[float] = []
    closing: set[asyncio.Task[None]] = set()

    async def close(conn: KafkaConnection) -> None:
        t0 = time.perf_counter()
        conn.timeout = CLOSE_WAIT        # how long close() waits for the broker's side
        await conn.close()
        closes.append(time.perf_counter() - t0)

    async def one() -> None:
        conn = await KafkaConnection.open(host, port, security=security,
                                          client_id="bench-conn")
        task = asyncio.create_task(close(conn))
        closing.add(task)
        task.add_done_callback(closing.discard)

    async def worker() -> None:
        for _ in todo:
            await one()

    await one()                  # warm-up: imports, the first ZooKeeper read
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    await asyncio.gather(*closing)
    return n / elapsed, closes


@dataclass
class Rates:
    sequential: float       # connections/s
    concurrent: float
    broker_ms: float        # broker CPU ms per connection (both phases)
    client_ms: float        # this process's CPU ms per connection
    close_ms: float         # median close() time
    stuck_closes: int       # closes that waited CLOSE_WAIT for the broker, then reset


def rates(ep: Endpoints, mode: str, args: argparse.Namespace) -> Rates:
    host, _, port = ep.bootstrap[mode].rpartition(":")
    security = ep.ours(mode)
    cpu0, own0 = ep.broker_cpu(), time.process_time()
    seq, closes = asyncio.run(connect_rate(host, int(port), security, args.connections, 1))
    conc, more = asyncio.run(connect_rate(host, int(port), security, args.connections,
                                          args.concurrency))
    closes += more
    return Rates(seq, conc, (ep.broker_cpu() - cpu0) * 1000 / len(closes),
                 (time.process_time() - own0) * 1000 / len(closes),
                 statistics.median(closes) * 1000,
                 sum(c >= CLOSE_WAIT for c in closes))


# -- the run -------------------------------------------------------------------------------


def rotated(modes: tuple[str, ...], i: int) -> tuple[str, ...]:
    k = i % len(modes)
    return modes[k:] + modes[:k]


def measure_throughput(ep: Endpoints, args: argparse.Namespace) -> dict[str, list[Throughput]]:
    data: dict[str, list[Throughput]] = {m: [] for m in DATA_MODES}
    for i in range(args.runs):
        for mode in rotated(DATA_MODES, i):
            t = throughput(ep, mode, args)
            data[mode].append(t)
            cpu = (f"; broker CPU s per 100 MB: produce {t.produce_cpu:.2f}, "
                   f"consume {t.consume_cpu:.2f}") if ep.pid else ""
            print(f"run {i + 1}: {mode:<14} produce {t.produce:6.1f} MB/s, "
                  f"consume {t.consume:6.1f} MB/s{cpu}", flush=True)
    return data


def measure_connections(ep: Endpoints, args: argparse.Namespace) -> dict[str, list[Rates]]:
    conns: dict[str, list[Rates]] = {m: [] for m in CONNECT_MODES}
    for i in range(args.runs):
        for mode in rotated(CONNECT_MODES, i):
            conns[mode].append(rates(ep, mode, args))
        for m in CONNECT_MODES:
            r = conns[m][-1]
            broker = f"broker {r.broker_ms:.2f}, " if ep.pid else ""
            print(f"run {i + 1}: {m:<14} {r.sequential:6.0f} / {r.concurrent:6.0f} conn/s; "
                  f"CPU ms/conn: {broker}client {r.client_ms:.2f}; close() median "
                  f"{r.close_ms:.1f} ms, {r.stuck_closes} of {2 * (args.connections + 1)} "
                  f"waited {CLOSE_WAIT:g} s", flush=True)
    return conns


def report(data: dict[str, list[Throughput]], conns: dict[str, list[Rates]],
           concurrency: int, cpu: bool) -> None:
    med = statistics.median
    figures = Figures({f"{m}/PLAINTEXT {what}": (">=", 0.5)
                       for m in ("SSL", "SASL_SSL") for what in ("produce", "consume")},
                      width=36)
    for what in ("produce", "consume"):
        mbs = {m: med([getattr(t, what) for t in data[m]]) for m in DATA_MODES}
        for m in DATA_MODES:
            extra = (f"(broker CPU {med([getattr(t, what + '_cpu') for t in data[m]]):.2f} s "
                     f"per 100 MB)") if cpu else ""
            figures.report(f"{m} {what}", mbs[m], "MB/s", extra)
        for m in DATA_MODES[1:]:
            figures.report(f"{m}/PLAINTEXT {what}", mbs[m] / mbs["PLAINTEXT"], "x")
    for label, attr in (("sequential", "sequential"), (f"{concurrency} concurrent", "concurrent")):
        for m in CONNECT_MODES:
            extra = (f"(broker CPU {med([r.broker_ms for r in conns[m]]):.2f} ms/conn)"
                     if cpu and attr == "sequential" else "")
            figures.report(f"{m} conn/s {label}", med([getattr(r, attr) for r in conns[m]]),
                           "conn/s", extra)


def run(ep: Endpoints, args: argparse.Namespace) -> None:
    upsert_scram_user(ep.bootstrap["PLAINTEXT"], ep.user, ep.password)
    data = measure_throughput(ep, args)
    conns = measure_connections(ep, args)
    report(data, conns, args.concurrency, ep.pid is not None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=1024, help="value bytes")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--connections", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--user", default="bench")
    ap.add_argument("--password", default="bench-secret")
    ap.add_argument("--bootstrap", help="an existing broker's PLAINTEXT listener")
    ap.add_argument("--ssl", help="with --bootstrap: its SSL listener")
    ap.add_argument("--sasl-ssl", help="with --bootstrap: its SASL_SSL listener (SCRAM-SHA-512)")
    ap.add_argument("--sasl-plaintext", help="with --bootstrap: its SASL_PLAINTEXT listener")
    ap.add_argument("--ca", help="with --bootstrap: the CA certificate (PEM) its listeners use")
    args = ap.parse_args()
    # a SIGTERM unwinds like Ctrl-C: the broker and ZooKeeper we started are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    print(f"{args.runs} runs, {args.records} records of {args.size} B over {args.partitions} "
          f"partition(s), acks=all, linger.ms=5; {args.connections} connections "
          f"(sequential, {args.concurrency} concurrent), {MECHANISM}; medians")
    if args.bootstrap:
        given = {"SSL": args.ssl, "SASL_SSL": args.sasl_ssl,
                 "SASL_PLAINTEXT": args.sasl_plaintext}
        if not all(given.values()) or not args.ca:
            ap.error("--bootstrap needs --ssl, --sasl-ssl, --sasl-plaintext and --ca")
        run(Endpoints({"PLAINTEXT": args.bootstrap, **given}, args.ca, args.user,
                      args.password), args)
    else:
        with tempfile.TemporaryDirectory(prefix="pybroker-bench-pki-") as tmp:
            pki = make_pki(Path(tmp), names=("broker",))
            with one_broker(broker_overrides(pki.keystore("broker"), pki.ca),
                            listeners=EXTRA_LISTENERS) as broker:
                bootstrap = {"PLAINTEXT": broker.bootstrap, **{
                    name: f"127.0.0.1:{port}" for name, port in broker.extra_listeners.items()}}
                run(Endpoints(bootstrap, pki.ca, args.user, args.password, broker.pid), args)
    print(f"reproduce: {command_line()}")


if __name__ == "__main__":
    main()
