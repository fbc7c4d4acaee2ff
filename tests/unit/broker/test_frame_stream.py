"""broker/network/frame_stream.py over a real socket pair, on asyncio's loop and on
uvloop (the broker's): frames sent in arbitrary pieces come out whole and in order;
a half close gives the frames before it, then the end, and responses still go out;
nothing is read while no read_frames waits (the client's bytes stay in the kernel);
a refused size is raised by read_frames."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
from collections.abc import Awaitable, Callable

import pytest
import uvloop

from broker.network.frame_stream import FrameStream
from protocol.framing import FrameTooLarge

LOOPS = ["asyncio", "uvloop"]


def _run(loop_kind: str, body: Callable[[], Awaitable[None]]) -> None:
    if loop_kind == "uvloop":
        uvloop.run(body())
    else:
        asyncio.run(body())


async def _pair(max_frame: int = 1 << 24) -> tuple[FrameStream, socket.socket]:
    server_side, client = socket.socketpair()
    server_side.setblocking(False)
    stream = FrameStream(max_frame)
    await asyncio.get_running_loop().connect_accepted_socket(lambda: stream, server_side)
    return stream, client


def _wire(frames: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_frames_in_pieces_then_half_close_then_a_response(loop_kind: str) -> None:
    rng = random.Random(5)
    frames = [rng.randbytes(rng.choice([0, 10, 3000, 40_000, 700_000])) for _ in range(25)]

    async def body() -> None:
        stream, client = await _pair()
        wire = _wire(frames)

        def send() -> None:
            pos = 0
            while pos < len(wire):
                step = rng.randrange(1, 200_000)
                client.sendall(wire[pos:pos + step])
                pos += step
            client.shutdown(socket.SHUT_WR)
        sender = asyncio.get_running_loop().run_in_executor(None, send)
        got: list[bytes] = []
        total = 0
        while True:
            out = await stream.read_frames()
            if out is None:
                break
            got += out[0]
            total += out[1]
        await sender
        assert got == frames and total == len(wire)
        stream.writelines([b"resp", b"onse"])
        await stream.drain()
        client.settimeout(5)
        assert client.recv(100) == b"response"
        stream.close()
        client.close()
    _run(loop_kind, body)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_nothing_is_read_while_no_read_frames_waits(loop_kind: str) -> None:
    async def body() -> None:
        stream, client = await _pair()
        client.sendall(_wire([b"first"]))
        assert await stream.read_frames() == ([b"first"], 9)
        client.sendall(_wire([b"second"]))
        await asyncio.sleep(0.1)              # the loop runs, the transport is paused
        assert stream.frames.buffered == 0 and not stream._ready
        assert await stream.read_frames() == ([b"second"], 10)
        stream.close()
        client.close()
    _run(loop_kind, body)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_refused_size_is_raised_and_a_lost_peer_ends_the_stream(loop_kind: str) -> None:
    async def body() -> None:
        stream, client = await _pair(max_frame=1000)
        client.sendall(struct.pack(">i", 1001))
        with pytest.raises(FrameTooLarge):
            await stream.read_frames()
        stream.close()
        client.close()
        stream2, client2 = await _pair()
        client2.close()
        assert await stream2.read_frames() is None
        stream2.close()
    _run(loop_kind, body)
