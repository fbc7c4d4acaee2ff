"""sendfile or a copy, to a loopback peer: which sends a file faster, and what each costs
the sender and the receiver (the reason behind ``fetch.zero.copy=auto``,
broker/network/frame_stream.py).

    .venv/bin/python bench/loopback_send.py [--mib 512] [--chunk-mib 8] [--runs 3]

A file of ``--mib`` MiB (random bytes, in a temp dir, read once so its pages are in the
page cache) goes over one TCP connection on 127.0.0.1, ``--chunk-mib`` MiB per write,
as a broker answers a consumer's fetches:

* sendfile: ``os.sendfile`` from the file to the socket (what the broker does for a
  remote peer: the socket's segments hold the page-cache pages);
* copy: ``os.pread`` of the chunk, then ``socket.sendall`` of it (what the broker does
  for a loopback peer: one linear buffer per segment).

The receiver, a thread of this process, reads into one 1 MiB buffer with ``recv_into``.
Figures: MB/s over the whole file, and CPU seconds per GB of the sending thread and of
the receiving thread (``time.thread_time``), medians of ``--runs``; the two ways run
alternately. The sender and the receiver are threads of one process, so they share the
GIL only between system calls, which release it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

MODES = ("sendfile", "copy")


def send_file(mode: str, fd: int, size: int, chunk: int) -> dict[str, float]:
    """One transfer of the file's ``size`` bytes over loopback -> its figures."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    got: dict[str, float] = {}

    def receive() -> None:
        with socket.create_connection(("127.0.0.1", port)) as c:
            view = memoryview(bytearray(1 << 20))
            n, cpu0 = 0, time.thread_time()
            while n < size:
                k = c.recv_into(view)
                if not k:
                    raise SystemExit(f"{mode}: the sender closed after {n} of {size} bytes")
                n += k
            got["receiver"] = time.thread_time() - cpu0
    reader = threading.Thread(target=receive)
    reader.start()
    conn, _ = listener.accept()
    start, cpu0 = time.perf_counter(), time.thread_time()
    with conn:
        offset = 0
        while offset < size:
            n = min(chunk, size - offset)
            if mode == "sendfile":
                sent = 0
                while sent < n:
                    k = os.sendfile(conn.fileno(), fd, offset + sent, n - sent)
                    if k == 0:
                        raise SystemExit("the file ended early")
                    sent += k
            else:
                conn.sendall(os.pread(fd, n, offset))
            offset += n
        sender = time.thread_time() - cpu0
        reader.join()
    wall = time.perf_counter() - start
    listener.close()
    gb = size / 1e9
    return {"MB/s": size / wall / 1e6, "sender s/GB": sender / gb,
            "receiver s/GB": got["receiver"] / gb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--chunk-mib", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size, chunk = args.mib << 20, args.chunk_mib << 20
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="pybroker-loopback-send-") as tmp:
        path = Path(tmp) / "data"
        with open(path, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(args.mib):
                f.write(block)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, size, 0)                       # into the page cache
            for _ in range(args.runs):
                for mode in MODES:
                    runs[mode].append(send_file(mode, fd, size, chunk))
        finally:
            os.close(fd)
    print(f"# {args.mib} MiB over 127.0.0.1 in {args.chunk_mib} MiB writes, "
          f"medians of {args.runs}")
    for mode in MODES:
        med = {k: statistics.median(r[k] for r in runs[mode]) for k in runs[mode][0]}
        print(f"{mode:9s} {med['MB/s']:8.1f} MB/s   sender {med['sender s/GB']:.2f} s/GB   "
              f"receiver {med['receiver s/GB']:.2f} s/GB   (MB/s runs: "
              + ", ".join(f"{r['MB/s']:.0f}" for r in runs[mode]) + ")")
    print(f"reproduce: .venv/bin/python bench/loopback_send.py {' '.join(sys.argv[1:])}".rstrip())


if __name__ == "__main__":
    main()
