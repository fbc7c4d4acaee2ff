"""The aiokafka scenario as a standalone script, so one code path serves both
aiokafka 0.14 (the project venv) and aiokafka 0.12 (its own small venv, see
test_aiokafka.py): ``python aiokafka_scenario.py BOOTSTRAP TOPIC``.

It creates the topic (AIOKafkaAdminClient), produces every codec's planned
records, reads them back by assignment, asks offsets by timestamp, deletes the
topic, and prints one JSON object: aiokafka's version, what was produced (with
offsets), what was read, and the timestamp answers. The checks are done by the
test in the project venv, with tests/integration/clients/common.py.

Only the standard library and aiokafka are imported here (the old venv has
nothing else); the planned records come in on stdin as JSON.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any


def b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


async def scenario(bootstrap: str, topic: str, plan: dict[str, Any]) -> dict[str, Any]:
    import aiokafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    partitions = plan["partitions"]
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()
    await asyncio.sleep(0.5)  # leadership arrives through the controller

    produced = []
    for codec, recs in plan["codecs"].items():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                             compression_type=None if codec == "none" else codec)
        await p.start()
        try:
            futs = []
            for r in recs:
                headers = [(k, unb64(v)) for k, v in r["headers"]]
                futs.append((r, await p.send(topic, value=unb64(r["value"]), key=unb64(r["key"]),
                                             partition=r["partition"], timestamp_ms=r["timestamp"],
                                             headers=headers)))
            for r, f in futs:
                md = await f
                produced.append({**r, "offset": md.offset, "md_partition": md.partition})
        finally:
            await p.stop()

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await c.start()
    consumed = []
    times: list[Any] = []
    try:
        tps = [TopicPartition(topic, i) for i in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        end = await c.end_offsets(tps)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        async def behind() -> bool:
            return any([await c.position(tp) < end[tp] for tp in tps])

        while await behind() and loop.time() < deadline:
            for tp, msgs in (await c.getmany(timeout_ms=500)).items():
                for m in msgs:
                    consumed.append({"partition": m.partition, "offset": m.offset,
                                     "key": b64(m.key), "value": b64(m.value or b""),
                                     "headers": [[k, b64(v)] for k, v in (m.headers or ())],
                                     "timestamp": m.timestamp})
        for part, ts in plan["probes"]:
            tp = TopicPartition(topic, part)
            got = (await c.offsets_for_times({tp: ts}))[tp]
            times.append([part, ts, None if got is None else got.offset])
    finally:
        await c.stop()

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([topic])
    finally:
        await admin.close()
    return {"version": aiokafka.__version__, "produced": produced, "consumed": consumed,
            "times": times}


def main() -> None:
    bootstrap, topic = sys.argv[1], sys.argv[2]
    plan = json.load(sys.stdin)
    print(json.dumps(asyncio.run(scenario(bootstrap, topic, plan))))


if __name__ == "__main__":
    main()
