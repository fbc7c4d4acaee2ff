"""A non-idempotent producer that sends each value exactly once (issue 16, item 3): our
own client (client/producer.send_batches with retries=0), acks=all, one round at a time.

Why not librdkafka with retries=0: the campaign saw it write a value of such a producer
twice (once 149 offsets apart) and report NOT_ENOUGH_REPLICAS for a value that was in
the log — its last attempt's error after an earlier attempt whose answer was lost. A
client that resends makes the checker's "duplicate" and "G1a" the client's doing, so
they could not be held against the broker. This one makes one attempt per value: a
value appears at most once unless the broker wrote it twice, and "fail" is recorded
only for an answer that means the broker refused it (queue_workload.DEFINITELY_NOT_
WRITTEN); anything else (a lost connection, a timeout, an error after the append such
as NOT_ENOUGH_REPLICAS_AFTER_APPEND or KAFKA_STORAGE_ERROR from purgatory) is "info".

Each round sends one value to every partition in one ``send_batches`` call (one Produce
per leader) and waits for it, so its sends are sequential per partition, as a Jepsen
client's. ``rate`` is values/s in all. The same interface as QueueProducer
(``process``, ``errors``, ``fatal``, ``start``, ``stop``, ``close``). Build and start it
inside the client host (``make``): its thread, and so its sockets, stay there.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.fault.queue_history import QueueHistory
from tests.fault.queue_workload import DEFINITELY_NOT_WRITTEN

TIMEOUT_MS = 5000


class SingleShotProducer:
    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int],
                 history: QueueHistory, process: str = "producer", rate: float = 200.0,
                 base: int = 0) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, list(partitions)
        self.history, self.process, self.rate = history, process, rate
        self.next = {p: base for p in self.partitions}
        self.errors: dict[str, int] = {}
        self.fatal: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        history.opened(process, "producer", False)

    def start(self) -> SingleShotProducer:
        self._thread = threading.Thread(target=self._run, name=f"queue-{self.process}",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as e:  # noqa: BLE001 - reported as the producer's fatal error
            self.fatal = f"{type(e).__name__}: {e}"

    async def _main(self) -> None:
        from client.admin import KafkaAdmin
        from client.producer import send_batches

        admin = KafkaAdmin(self.bootstrap)
        try:
            sent, t0 = 0, time.monotonic()
            while not self._stop.is_set():
                await self._round(admin, send_batches)
                sent += len(self.partitions)
                ahead = sent / self.rate - (time.monotonic() - t0)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        finally:
            await admin.close()

    async def _round(self, admin: object, send_batches: object) -> None:
        ids: dict[tuple[str, int], int] = {}
        batches = {}
        now = int(time.time() * 1000)
        for p in self.partitions:
            value = self.next[p]
            self.next[p] += 1
            ids[(self.topic, p)] = self.history.send_invoked(self.process, p, value)
            batches[(self.topic, p)] = build_batch([(None, str(value).encode(), now)])
        try:
            results = await send_batches(admin, batches, acks=-1,  # type: ignore[operator]
                                         timeout_ms=TIMEOUT_MS, retries=0)
        except Exception as e:  # noqa: BLE001 - no metadata, no connection: outcome unknown
            for sid in ids.values():
                self.history.send_unknown(sid, type(e).__name__)
            self._count(type(e).__name__)
            await asyncio.sleep(0.2)
            return
        for tp, sid in ids.items():
            r = results.get(tp)
            if r is not None and r.error == ErrorCode.NONE:
                self.history.send_ok(sid, r.base_offset)
                continue
            name = ErrorCode.from_code(r.error).name if r is not None else "NO_ANSWER"
            self._count(name)
            if name in DEFINITELY_NOT_WRITTEN:
                self.history.send_failed(sid, name)
            else:
                self.history.send_unknown(sid, name)

    def _count(self, name: str) -> None:
        self.errors[name] = self.errors.get(name, 0) + 1

    def stop(self, flush_timeout: float = 60.0) -> int:
        """Stop after the round in flight (its answers recorded) -> 0: nothing is left
        queued (a round still unanswered after ``flush_timeout`` stays unknown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(flush_timeout)
        return 0

    def close(self) -> None:
        self.stop(TIMEOUT_MS / 1000 + 10)


__all__ = ["SingleShotProducer"]
