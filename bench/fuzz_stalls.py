"""Event-loop stalls of one broker under the fuzzer (issue 17's benchmark).

    .venv/bin/python bench/fuzz_stalls.py [--frames 50000] [--seed 1]

Runs a shorter fuzz campaign (tests/fuzz/fuzz_run.py: a real ZooKeeper and
broker, confluent-kafka clients on a protected topic, mutated frames over
pipelined connections) and prints the broker's event-loop lag as measured
inside it (broker/loop_lag.py: how late a 10 ms timer fires; p50/p99/max),
the frame rate, RSS and the well-behaved clients' produce latency, then the
command that reproduces the figures. The invariants are reported, not
enforced (``make fuzz`` enforces them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzz import fuzz_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--connections", type=int, default=24)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pybroker-fuzz-bench-") as work:
        args = fuzz_run.parse_args(["--frames", str(opts.frames), "--seed", str(opts.seed),
                                    "--connections", str(opts.connections),
                                    "--work", work])
        r = fuzz_run.run(args)
    lag, st, w = r.lag, r.steady, r.wire
    print(f"event-loop lag under the fuzzer: p50 {lag.get('p50_ms')} ms, p99 "
          f"{lag.get('p99_ms')} ms, max {lag.get('max_ms')} ms "
          f"({lag.get('over_50ms')} of {lag.get('samples')} samples over 50 ms, "
          f"{lag.get('over_50ms_on_cpu')} of them with the broker on CPU, "
          f"{lag.get('over_50ms_in_loop')} of those on the loop thread)")
    print(f"frames {w.get('frames_sent', 0):,} at {w.get('frames_per_s', 0):,}/s, "
          f"{w.get('connections', 0):,} connections; RSS start/max/end "
          f"{r.rss_mb.get('start')}/{r.rss_mb.get('max')}/{r.rss_mb.get('end')} MB")
    print(f"well-behaved produce latency p50 {st.get('delivery_ms', {}).get('p50', 0):.1f} "
          f"p99 {st.get('delivery_ms', {}).get('p99', 0):.1f} max "
          f"{st.get('delivery_ms', {}).get('max', 0):.1f} ms; crashes {r.crashes}; "
          f"invariant violations {len(r.violations)}")
    for v in r.violations:
        print(f"  - {v}")
    print(f"reproduce: .venv/bin/python bench/fuzz_stalls.py --frames {opts.frames} "
          f"--seed {opts.seed} --connections {opts.connections}  (2 shared cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
