"""CPU cost of the leader's append path per produced MB, in-process (issue 17).

What the broker spends between a decoded Produce request and the bytes in the
segment: Partition.append_records_as_leader (header/CRC checks, the record walk of
protocol/record_validation, bounded decompression, the log append). No network, no
client: measured with process CPU time, so it holds on a loaded machine where the
end-to-end benchmark (bench/produce_validation.py) is noisy.

    python bench/produce_append_cpu.py [--runs 5] [--batches 200] [--records 500]

Batches as librdkafka sends them with linger: ``--records`` records of 1 KiB values
that compress about 3:1 with 16-byte keys, per codec (none, lz4, zstd), built once.
MB/s = payload bytes / CPU seconds; medians over the runs. Run it in two trees (e.g.
``PYTHONPATH=<old tree> python <old tree>/bench/produce_append_cpu.py``) to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker.replication.partition_state import PartitionState  # noqa: E402
from broker.replication.replica_manager import ReplicaManager  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from storage.config import LogConfig  # noqa: E402
from storage.log_manager import LogManager  # noqa: E402

CODECS = {"none": 0, "lz4": 3, "zstd": 4}
VALUE_SIZE = 1024
MB = 1_000_000


def batches(codec: int, count: int, per_batch: int) -> tuple[list[bytes], int]:
    text = (b"the quick brown fox jumps over the lazy dog " * 30)[:VALUE_SIZE // 2]
    values = [os.urandom(VALUE_SIZE // 4).hex().encode()[:VALUE_SIZE // 2] + text
              for _ in range(64)]
    now = int(time.time() * 1000)
    out, payload = [], 0
    for b in range(count):
        rows = [(b"key-%012d" % (b * per_batch + i), values[i & 63], now + i)
                for i in range(per_batch)]
        payload += sum(len(k) + len(v) for k, v, _ in rows)
        out.append(bytes(build_batch(rows, codec=codec)))
    return out, payload


def one_run(work: Path, data: list[bytes]) -> float:
    """CPU seconds to append every batch of ``data`` to a fresh partition."""
    logs = LogManager([str(work / uuid.uuid4().hex)], LogConfig())
    logs.startup()
    replicas = ReplicaManager(1, logs, min_insync_replicas=lambda _t: 1)
    state = PartitionState("bench", 0, uuid.uuid4(), 1, 1, 0, (1,), 0, (1,))
    errors = replicas.become_leader_or_follower(1, [state])
    assert not any(errors.values()), errors
    partition = replicas.partition("bench", 0)
    assert partition is not None
    start = time.process_time()
    for batch in data:
        partition.append_records_as_leader(memoryview(batch), required_acks=1,
                                           min_insync_replicas=1, single_batch=True)
    elapsed = time.process_time() - start
    logs.shutdown()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--records", type=int, default=500, help="records per batch")
    args = ap.parse_args()
    print(f"{args.batches} batches of {args.records} records ({VALUE_SIZE}-byte values), "
          f"median of {args.runs} runs, tree {REPO}")
    with tempfile.TemporaryDirectory(prefix="pybroker-append-cpu-") as tmp:
        for name, codec in CODECS.items():
            data, payload = batches(codec, args.batches, args.records)
            rates = [payload / one_run(Path(tmp), data) / MB for _ in range(args.runs)]
            print(f"  append {name:5s} {statistics.median(rates):8.1f} MB/s of CPU   "
                  f"(runs: {', '.join(f'{r:.0f}' for r in rates)})", flush=True)
    print(f"reproduce: python {' '.join(sys.argv)}")


if __name__ == "__main__":
    main()
