"""Send fuzz frames to a real broker over many pipelined connections.

``WireSender(factory, port, ...).run(total)`` hands out frames in index order
(frame i is ``factory.frame(i)``: the same seed sends the same frames, though
which connection carries which frame depends on timing). Each of
``connections`` workers:

1. takes a burst: frames up to ``burst`` long, ending early at the first one
   the broker is expected to close on (decode_check.Expect.CLOSE / STALL, or a
   lying size prefix) - frames after it would never be read, so they are not
   wasted on this connection;
2. opens a connection if it has none (counted), writes the whole burst at once
   (pipelined), half-closes after a STALL frame so the broker sees EOF;
3. reads as many responses as the burst has ANSWER frames (size prefix +
   frame; bodies are not decoded), then, after a closing frame, waits for EOF;
4. keeps the connection for the next burst unless the broker closed it.

Counted (``WireStats``): frames and bytes sent, responses, connections
opened, closes the broker made when expected and early ones (before every
expected response came: an acks=0 Produce that failed, a handler that
closed), reads that timed out (``timeout`` s with no byte: the connection is
dropped: a request parked with a huge wait), connection failures. Progress is
printed every ``progress_s`` seconds.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from dataclasses import dataclass, field

from tests.fuzz.decode_check import Expect, check_frame
from tests.fuzz.mutators import FrameFactory, FuzzFrame


@dataclass
class WireStats:
    frames_sent: int = 0
    bytes_sent: int = 0
    responses: int = 0
    connections: int = 0
    expected_closes: int = 0
    early_closes: int = 0
    missing_closes: int = 0
    timeouts: int = 0
    connect_failures: int = 0
    seconds: float = 0.0
    by_mutation: dict[str, int] = field(default_factory=dict)
    early_close_frames: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.frames_sent / self.seconds if self.seconds else 0.0


class BrokerGone(RuntimeError):
    pass


class WireSender:
    def __init__(self, factory: FrameFactory, port: int, *, connections: int = 24,
                 burst: int = 32, timeout: float = 3.0, progress_s: float = 15.0,
                 alive: object = None, host: str = "127.0.0.1") -> None:
        self.factory = factory
        self.port = port
        self.host = host
        self.connections = connections
        self.burst = burst
        self.timeout = timeout
        self.progress_s = progress_s
        self.alive = alive           # callable -> bool (the broker process runs)
        self.stats = WireStats()
        self._next = 0
        self._end = 0
        self._classify_rng = random.Random(0)

    def _take(self) -> list[tuple[FuzzFrame, Expect]]:
        batch: list[tuple[FuzzFrame, Expect]] = []
        while self._next < self._end and len(batch) < self.burst:
            frame = self.factory.frame(self._next)
            self._next += 1
            expect, _ = check_frame(frame, self._classify_rng, records_deep=False)
            if frame.last and expect is not Expect.CLOSE:
                expect = Expect.STALL
            batch.append((frame, expect))
            if expect in (Expect.CLOSE, Expect.STALL):
                break
        return batch

    async def run(self, total: int, start: int = 0) -> WireStats:
        self._next, self._end = start, start + total
        started = time.monotonic()
        reporter = asyncio.create_task(self._progress(started))
        try:
            await asyncio.gather(*(self._worker() for _ in range(self.connections)))
        finally:
            reporter.cancel()
            self.stats.seconds = time.monotonic() - started
        return self.stats

    async def _progress(self, started: float) -> None:
        while True:
            await asyncio.sleep(self.progress_s)
            s = self.stats
            el = time.monotonic() - started
            print(f"  {s.frames_sent:,} frames in {el:.0f} s ({s.frames_sent / el:,.0f}/s), "
                  f"{s.connections:,} connections, {s.responses:,} responses, "
                  f"{s.timeouts} timeouts", flush=True)

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        for attempt in range(100):
            try:
                pair = await asyncio.open_connection(self.host, self.port)
                self.stats.connections += 1
                return pair
            except OSError:
                self.stats.connect_failures += 1
                if self.alive is not None and not self.alive():  # type: ignore[operator]
                    raise BrokerGone("the broker process exited") from None
                await asyncio.sleep(min(0.01 * (attempt + 1), 0.5))
        raise BrokerGone("the broker refused 100 connections in a row")

    async def _read_frame(self, reader: asyncio.StreamReader) -> bool:
        """One response; False on EOF/reset; raises TimeoutError."""
        try:
            head = await asyncio.wait_for(reader.readexactly(4), self.timeout)
            (size,) = struct.unpack(">i", head)
            await asyncio.wait_for(reader.readexactly(size), self.timeout)
            return True
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return False

    async def _worker(self) -> None:
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        s = self.stats
        try:
            while True:
                batch = self._take()
                if not batch:
                    return
                if conn is None:
                    conn = await self._open()
                reader, writer = conn
                for frame, _ in batch:
                    s.by_mutation[frame.mutation] = s.by_mutation.get(frame.mutation, 0) + 1
                    s.bytes_sent += len(frame.data)
                s.frames_sent += len(batch)
                terminal = batch[-1][1] in (Expect.CLOSE, Expect.STALL)
                try:
                    writer.write(b"".join(f.data for f, _ in batch))
                    if batch[-1][1] is Expect.STALL:
                        writer.write_eof()
                    await writer.drain()
                except (ConnectionError, OSError):
                    s.early_closes += 1
                    writer.close()
                    conn = None
                    continue
                expected = sum(1 for _, e in batch if e is Expect.ANSWER)
                got, closed = 0, False
                try:
                    while got < expected:
                        if not await self._read_frame(reader):
                            closed = True
                            break
                        got += 1
                    if terminal and not closed:
                        while await self._read_frame(reader):   # stray answers, then EOF
                            pass
                        closed = True
                        s.expected_closes += 1
                except (TimeoutError, asyncio.TimeoutError):
                    s.timeouts += 1
                    closed = True
                s.responses += got
                if closed and got < expected:
                    s.early_closes += 1
                    if len(s.early_close_frames) < 50:
                        s.early_close_frames.append(batch[min(got, len(batch) - 1)][0].index)
                if closed:
                    writer.close()
                    conn = None
        finally:
            if conn is not None:
                conn[1].close()
