"""An aiokafka transactional producer for tests/integration/test_transactions.py:
``python aiokafka_transactions.py BOOTSTRAP TOPIC TID``. Commit, abort, commit (12
records each over 3 partitions, values "<label>-<i>"), then an aiokafka read_committed
consumer reads the topic; prints one JSON object with the values it read."""

from __future__ import annotations

import asyncio
import json
import sys


async def main(bootstrap: str, topic: str, tid: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                transaction_timeout_ms=10000)
    await producer.start()
    try:
        for label, commit in (("k1", True), ("ka", False), ("k2", True)):
            await producer.begin_transaction()
            for i in range(12):
                await producer.send_and_wait(topic, f"{label}-{i}".encode(), partition=i % 3)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        values: list[str] = []
        ends = await consumer.end_offsets(tps)        # read_committed: the LSOs
        for _ in range(120):
            positions = [await consumer.position(tp) for tp in tps]
            if all(pos >= ends[tp] for pos, tp in zip(positions, tps)):
                break
            batch = await consumer.getmany(timeout_ms=500)
            values += [m.value.decode() for msgs in batch.values() for m in msgs]
    finally:
        await consumer.stop()
    print(json.dumps({"values": values}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
