"""Capture golden request frames from stock clients into tests/golden/<client>/.

Run once by hand (the tests only read the stored fixtures):

    .venv/bin/python -m tests.tools.capture_golden [--clients confluent,kafka-python,aiokafka,java]

It starts tests/tools/capture_server.py on 127.0.0.1 and drives each client
through: produce (keys, headers, every compression the client has), an
idempotent producer where the client has one, a group consumer (join, sync,
fetch, commit, leave), list offsets (earliest, latest, by time) and admin
create/delete topic. Every step uses its own client id
``golden-<client>-<step>``, which is how a frame is labelled.

Fixtures: ``tests/golden/<client>/index.json`` (one entry per frame: file,
client, step, client id, api key/name/version, correlation id) and one
``NNNN-<api>-v<version>.hex`` per frame (the frame after its size prefix, as
hex). Identical frames (correlation id aside) are kept once, and at most
``PER_KIND`` distinct frames per (step, api, version).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from protocol.api_keys import api_name
from tests.oracle import install_java_client
from tests.tools.capture_server import Captured, CaptureBroker

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
PER_KIND = 3
MESSAGES = 3  # per produce step
IDLE_S = 3.5  # keep a consumer polling past one heartbeat interval (3 s by default)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _records() -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [(f"key-{i}".encode(), f"value-{i}-{'x' * 40}".encode(),
             [("trace", f"t{i}".encode()), ("empty", b"")]) for i in range(MESSAGES)]


def _idle(poll: Callable[[], object]) -> None:
    until = time.time() + IDLE_S
    while time.time() < until:
        poll()


# ---------------------------------------------------------------- confluent-kafka

def run_confluent(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "golden-confluent"
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "client.id": f"golden-confluent-produce-{codec}",
                      "compression.type": codec, "linger.ms": 20})
        for k, v, hs in _records():
            p.produce(topic, key=k, value=v, headers=hs, partition=0)
        assert p.flush(15) == 0, "confluent produce did not finish"
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "golden-confluent-produce-idempotent",
                  "enable.idempotence": True, "linger.ms": 20})
    for k, v, hs in _records():
        p.produce(topic, key=k, value=v, headers=hs, partition=0)
    assert p.flush(15) == 0, "confluent idempotent produce did not finish"

    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "golden-confluent-consume",
                  "group.id": "golden-confluent-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = 0, time.time() + 30
    while got < MESSAGES and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    assert got >= MESSAGES, f"confluent consumer got {got} messages"
    _idle(lambda: c.poll(0.2))
    c.commit(asynchronous=False)
    c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.offsets_for_times([TopicPartition(topic, 0, int(time.time() * 1000) - 60_000)], timeout=10)
    c.committed([TopicPartition(topic, 0)], timeout=10)
    c.close()

    a = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden-confluent-admin"})
    for f in a.create_topics([NewTopic("golden-confluent-admin", 2, 1)]).values():
        f.result(15)
    for f in a.delete_topics(["golden-confluent-admin"]).values():
        f.result(15)


# ---------------------------------------------------------------- kafka-python

def run_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = "golden-kafka-python"
    for codec in CODECS:
        p = KafkaProducer(bootstrap_servers=bootstrap, client_id=f"golden-kafka-python-produce-{codec}",
                          compression_type=None if codec == "none" else codec, linger_ms=20)
        for k, v, hs in _records():
            p.send(topic, key=k, value=v, headers=hs, partition=0)
        p.flush(15)
        p.close(5)
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, client_id="golden-kafka-python-consume",
                      group_id="golden-kafka-python-group", auto_offset_reset="earliest",
                      enable_auto_commit=False)
    got, deadline = 0, time.time() + 30
    while got < MESSAGES and time.time() < deadline:
        got += sum(len(v) for v in c.poll(500).values())
    assert got >= MESSAGES, f"kafka-python consumer got {got} messages"
    _idle(lambda: c.poll(200))
    c.commit()
    tp = TopicPartition(topic, 0)
    c.end_offsets([tp])
    c.beginning_offsets([tp])
    c.offsets_for_times({tp: int(time.time() * 1000) - 60_000})
    c.close()

    a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-kafka-python-admin")
    a.create_topics([NewTopic("golden-kafka-python-admin", 2, 1)])
    a.delete_topics(["golden-kafka-python-admin"])
    a.close()


# ---------------------------------------------------------------- aiokafka

def run_aiokafka(bootstrap: str) -> None:
    asyncio.run(_aiokafka(bootstrap))


async def _aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic = "golden-aiokafka"
    for codec in CODECS:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=f"golden-aiokafka-produce-{codec}",
                             compression_type=None if codec == "none" else codec, linger_ms=20)
        await p.start()
        try:
            futs = [await p.send(topic, key=k, value=v, headers=hs, partition=0)
                    for k, v, hs in _records()]
            await asyncio.gather(*futs)
        finally:
            await p.stop()
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="golden-aiokafka-produce-idempotent",
                         enable_idempotence=True)
    await p.start()
    try:
        for k, v, hs in _records():
            await p.send_and_wait(topic, key=k, value=v, headers=hs, partition=0)
    finally:
        await p.stop()

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, client_id="golden-aiokafka-consume",
                         group_id="golden-aiokafka-group", auto_offset_reset="earliest",
                         enable_auto_commit=False)
    await c.start()
    try:
        got, deadline = 0, time.time() + 30
        while got < MESSAGES and time.time() < deadline:
            got += sum(len(v) for v in (await c.getmany(timeout_ms=500)).values())
        assert got >= MESSAGES, f"aiokafka consumer got {got} messages"
        idle_until = time.time() + IDLE_S
        while time.time() < idle_until:
            await c.getmany(timeout_ms=200)
        await c.commit()
        tp = TopicPartition(topic, 0)
        await c.end_offsets([tp])
        await c.beginning_offsets([tp])
        await c.offsets_for_times({tp: int(time.time() * 1000) - 60_000})
    finally:
        await c.stop()

    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-aiokafka-admin")
    await a.start()
    try:
        await a.create_topics([NewTopic("golden-aiokafka-admin", 2, 1)])
        await a.delete_topics(["golden-aiokafka-admin"])
    finally:
        await a.close()


# ---------------------------------------------------------------- Java

def run_java(bootstrap: str) -> None:
    cp = install_java_client.classpath()
    src = Path(__file__).with_name("GoldenClient.java")
    proc = subprocess.run(["java", "-cp", cp, str(src), bootstrap], capture_output=True,
                          text=True, timeout=240)
    if proc.returncode != 0:
        raise RuntimeError(f"GoldenClient.java failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


CLIENTS: dict[str, Callable[[str], None]] = {
    "confluent": run_confluent, "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka, "java": run_java,
}


# ---------------------------------------------------------------- fixtures

def client_version(client: str) -> str:
    if client == "confluent":
        import confluent_kafka
        return f"confluent-kafka {confluent_kafka.version()[0]} / librdkafka {confluent_kafka.libversion()[0]}"
    if client == "kafka-python":
        import kafka
        return f"kafka-python {kafka.__version__}"
    if client == "aiokafka":
        import aiokafka
        return f"aiokafka {aiokafka.__version__}"
    return "kafka-clients 3.9.1 (Java)"


def _step(client: str, client_id: str | None) -> str:
    prefix = f"golden-{client}-"
    if client_id and client_id.startswith(prefix):
        return client_id[len(prefix):]
    return client_id or "(none)"


def write_fixtures(client: str, frames: list[Captured]) -> int:
    out = GOLDEN / client
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    seen: set[bytes] = set()
    per_kind: dict[tuple[str, int, int], int] = {}
    index = []
    version = client_version(client)
    for fr in frames:
        anon = fr.frame[:4] + b"\0\0\0\0" + fr.frame[8:]  # correlation id zeroed
        step = _step(client, fr.client_id)
        kind = (step, fr.api_key, fr.api_version)
        if anon in seen or per_kind.get(kind, 0) >= PER_KIND:
            continue
        seen.add(anon)
        per_kind[kind] = per_kind.get(kind, 0) + 1
        name = api_name(fr.api_key)
        fname = f"{len(index) + 1:04d}-{name}-v{fr.api_version}.hex"
        (out / fname).write_text(fr.frame.hex() + "\n")
        index.append({"file": fname, "client": client, "client_version": version,
                      "step": step, "client_id": fr.client_id,
                      "api_key": fr.api_key, "api_name": name, "api_version": fr.api_version,
                      "correlation_id": fr.correlation_id, "size": len(fr.frame)})
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return len(index)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", default=",".join(CLIENTS))
    args = ap.parse_args()
    failures = 0
    for client in args.clients.split(","):
        broker = CaptureBroker()
        port = broker.start()
        t0 = time.time()
        try:
            CLIENTS[client](f"127.0.0.1:{port}")
            status = "ok"
        except Exception as e:  # noqa: BLE001 - report and keep what was captured
            status = f"FAILED: {e!r}"
            failures += 1
        finally:
            broker.stop()
        n = write_fixtures(client, broker.frames)
        print(f"{client}: {status}; {len(broker.frames)} frames, {n} kept, "
              f"{time.time() - t0:.1f}s", flush=True)
        for err in broker.errors:
            print(f"  server error: {err}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
