"""broker/network/frame_stream.py over a real socket pair, on asyncio's loop and on
uvloop (the broker's): frames sent in arbitrary pieces come out whole and in order;
a half close gives the frames before it, then the end, and responses still go out;
nothing is read while no read_frames waits (the client's bytes stay in the kernel);
a refused size is raised by read_frames; a response's large file slices go by
sendfile and the response arrives byte for byte in order, also when the socket fills
in the middle of a slice and when bytes are already queued before one; a stream
without zero copy (a loopback peer under fetch.zero.copy=auto: ``zero_copy_for``)
copies them, in the same order."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import uvloop

from broker.config import BrokerConfig, ConfigError
from broker.network.frame_stream import SENDFILE_MIN_BYTES, FrameStream, zero_copy_for
from broker.replication.fetch_reads import SliceRecords
from protocol.framing import FrameTooLarge
from storage.segment import FileHandle, FileSlice

LOOPS = ["asyncio", "uvloop"]


def _run(loop_kind: str, body: Callable[[], Awaitable[None]]) -> None:
    if loop_kind == "uvloop":
        uvloop.run(body())
    else:
        asyncio.run(body())


async def _pair(max_frame: int = 1 << 24, zero_copy: bool = True
                ) -> tuple[FrameStream, socket.socket]:
    server_side, client = socket.socketpair()
    server_side.setblocking(False)
    stream = FrameStream(max_frame, zero_copy=zero_copy)
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


def _segment(tmp_path: Path, size: int) -> tuple[FileHandle, bytes]:
    data = random.Random(size).randbytes(size)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return FileHandle(str(path)), data


def _read_exactly(client: socket.socket, n: int) -> bytes:
    client.settimeout(10)
    got = bytearray()
    while len(got) < n:
        piece = client.recv(min(1 << 20, n - len(got)))
        assert piece, f"the stream ended after {len(got)} of {n} bytes"
        got += piece
    return bytes(got)


async def _responses_arrive(stream: FrameStream, client: socket.socket,
                            responses: list[list[object]], want: bytes,
                            read_after_s: float = 0.0) -> None:
    """Write ``responses`` while a thread reads the client side (starting
    ``read_after_s`` late); the client must get exactly ``want``. Closes both."""
    def read() -> bytes:
        time.sleep(read_after_s)
        return _read_exactly(client, len(want))
    reader = asyncio.get_running_loop().run_in_executor(None, read)
    for chunks in responses:
        await stream.write_response(chunks)
    await stream.drain()
    assert await reader == want
    stream.close()
    client.close()


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_large_slices_go_by_sendfile_small_ones_are_copied_all_in_order(
        loop_kind: str, tmp_path: Path) -> None:
    handle, data = _segment(tmp_path, 300_000)
    big = SliceRecords(FileSlice(handle, 1000, 200_000))
    small = SliceRecords(FileSlice(handle, 7, SENDFILE_MIN_BYTES - 1))

    async def body() -> None:
        stream, client = await _pair()
        want = (b"head" + data[1000:201_000] + b"mid" + data[7:7 + SENDFILE_MIN_BYTES - 1]
                + b"tail")
        await _responses_arrive(stream, client, [[b"head", big, bytearray(b"mid"), small,
                                                  memoryview(b"tail")]], want)
        assert stream.zero_copy_bytes == 200_000
        assert stream._dup_fd == -1               # no fd kept past the response
    _run(loop_kind, body)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_without_zero_copy_large_slices_are_copied_all_in_order(
        loop_kind: str, tmp_path: Path) -> None:
    """The same response as above from a stream made without zero copy, with a slice
    larger than the socket takes at once: nothing goes by sendfile, no fd is dup'ed,
    and the client gets the same bytes in the same order."""
    handle, data = _segment(tmp_path, 12_000_000)
    big = SliceRecords(FileSlice(handle, 1000, 11_000_000))
    small = SliceRecords(FileSlice(handle, 7, SENDFILE_MIN_BYTES - 1))

    async def body() -> None:
        stream, client = await _pair(zero_copy=False)
        want = (b"head" + data[1000:11_001_000] + b"mid" + data[7:7 + SENDFILE_MIN_BYTES - 1]
                + b"tail")
        await _responses_arrive(stream, client, [[b"head", big, bytearray(b"mid"), small,
                                                  memoryview(b"tail")]], want,
                                read_after_s=0.2)
        assert stream.zero_copy_bytes == 0
        assert stream._dup_fd == -1
    _run(loop_kind, body)


@pytest.mark.parametrize(("setting", "peer", "zero_copy"), [
    ("auto", "127.0.0.1", False), ("auto", "127.45.6.7", False), ("auto", "::1", False),
    ("auto", "::ffff:127.0.0.1", False),        # a v4 loopback peer on a dual-stack socket
    ("auto", "10.0.0.5", True), ("auto", "192.168.1.20", True), ("auto", "2001:db8::7", True),
    ("auto", "::ffff:10.0.0.5", True), ("auto", "fe80::1%eth0", True),
    ("auto", "?", True),                        # no IP address: taken for a remote peer
    ("true", "127.0.0.1", True), ("true", "10.0.0.5", True),
    ("false", "127.0.0.1", False), ("false", "10.0.0.5", False)])
def test_zero_copy_goes_to_every_peer_but_a_loopback_one_unless_told(
        setting: str, peer: str, zero_copy: bool) -> None:
    assert zero_copy_for(setting, peer) is zero_copy


def test_fetch_zero_copy_key_defaults_to_auto_and_refuses_other_values() -> None:
    assert BrokerConfig.from_properties({}).fetch_zero_copy == "auto"
    assert BrokerConfig.from_properties({"fetch.zero.copy": "false"}).fetch_zero_copy == "false"
    with pytest.raises(ConfigError, match=r"'sometimes'.*fetch\.zero\.copy"):
        BrokerConfig.from_properties({"fetch.zero.copy": "sometimes"})


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_full_socket_is_waited_for_and_the_response_stays_whole(
        loop_kind: str, tmp_path: Path) -> None:
    """The client starts reading late: the socket buffer fills in the middle of the
    first slice, write_response waits for room and goes on with sendfile; the bytes
    after the slice and the next response come after it."""
    handle, data = _segment(tmp_path, 12_000_000)
    first = SliceRecords(FileSlice(handle, 0, 8_000_000))
    second = SliceRecords(FileSlice(handle, 8_000_000, 4_000_000))

    async def body() -> None:
        stream, client = await _pair()
        want = b"one" + data[:8_000_000] + b"end-one" + b"two" + data[8_000_000:] + b"end-two"
        await _responses_arrive(stream, client, [[b"one", first, b"end-one"],
                                                 [b"two", second, b"end-two"]], want,
                                read_after_s=0.3)
        assert stream.zero_copy_bytes == 12_000_000
    _run(loop_kind, body)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_slice_behind_queued_bytes_is_copied_behind_them(loop_kind: str,
                                                            tmp_path: Path) -> None:
    handle, data = _segment(tmp_path, 1_000_000)
    region = SliceRecords(FileSlice(handle, 0, 1_000_000))
    queued = b"q" * 8_000_000

    async def body() -> None:
        stream, client = await _pair()
        stream.writelines([queued])               # more than the socket takes at once
        assert stream.transport.get_write_buffer_size() > 0
        await _responses_arrive(stream, client, [[b"head", region, b"tail"]],
                                queued + b"head" + data + b"tail")
        assert stream.zero_copy_bytes == 0
    _run(loop_kind, body)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_peer_gone_while_a_slice_waits_fails_the_write_and_frees_the_dup(
        loop_kind: str, tmp_path: Path) -> None:
    handle, _data = _segment(tmp_path, 8_000_000)
    region = SliceRecords(FileSlice(handle, 0, 8_000_000))

    async def body() -> None:
        stream, client = await _pair()
        loop = asyncio.get_running_loop()
        loop.call_later(0.2, client.close)
        with pytest.raises(OSError):         # ConnectionResetError / BrokenPipeError
            await stream.write_response([b"head", region])
        stream.close()                        # what Connection does on a failed write
        await asyncio.sleep(0.05)
        assert stream._dup_fd == -1
    _run(loop_kind, body)
