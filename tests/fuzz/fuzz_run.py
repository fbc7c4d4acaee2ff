"""The fuzz campaign (``make fuzz``): a real broker, a million frames, the invariants.

    python -m tests.fuzz.fuzz_run --frames 1000000 --seed 1 [--inproc-frames N]
    python -m tests.fuzz.fuzz_run --show-frame 12345 --seed 1   # one frame, as hex

Steps:

1. ZooKeeper and one broker (tests/integration harness: started and stopped by
   pid, log at INFO so the loop-lag lines are written), the protected topic
   ``fuzz-steady-topic`` (2 partitions) created, and the well-behaved clients
   (steady_clients.py, a process of their own) producing and consuming on it.
2. ``--frames`` frames over ``--connections`` pipelined connections (wire.py);
   the broker's RSS sampled from /proc every 0.5 s, its liveness checked.
3. The clients stopped (their latencies and losses read), the broker stopped
   with SIGTERM (its exit code, its "event loop lag since start" line), its
   log scanned for unhandled exceptions ("Traceback", "error handling"), and
   every segment on disk checked (disk_check.py).
4. ``--inproc-frames`` more frames (inter-broker APIs included) straight to the
   decoders in this process (decode_check.py): only documented errors allowed.

Invariant violations (exit status 1 when any): broker exited before the stop,
unclean exit code, unhandled-exception lines in its log, in-process decoder
errors outside the contract, invalid data on disk, well-behaved records lost
or failed, stall max above ``--max-stall-ms`` (50), RSS growth above
``--max-rss-growth-mb`` (400). Figures and violations are printed, with the
command that reproduces the run (same seed, same frames).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fuzz.decode_check import check_frame  # noqa: E402
from tests.fuzz.disk_check import check_log_dirs  # noqa: E402
from tests.fuzz.mutators import FrameFactory  # noqa: E402
from tests.fuzz.wire import BrokerGone, WireSender, WireStats  # noqa: E402

PROTECTED_TOPIC = "fuzz-steady-topic"
PROTECTED_GROUP = "fuzz-steady-group"
LAG_LINE = re.compile(r"event loop lag since start \((\d+) s\): p50 ([\d.]+) p99 ([\d.]+) "
                      r"max ([\d.]+) ms \((\d+) samples, (\d+) over 50 ms"
                      r"(?:, (\d+) of them on CPU)?(?:, (\d+) on the loop thread)?")
WINDOW_LINE = re.compile(r"event loop lag over \d+ s: p50 [\d.]+ p99 ([\d.]+) max ([\d.]+) ms")


@dataclass
class Result:
    seed: int
    frames: int
    wire: dict[str, Any] = field(default_factory=dict)
    broker_alive_at_end: bool = False
    broker_exit_code: int | None = None
    crashes: int = 0
    unhandled: list[str] = field(default_factory=list)
    unhandled_count: int = 0
    lag: dict[str, float] = field(default_factory=dict)
    rss_mb: dict[str, float] = field(default_factory=dict)
    steady: dict[str, Any] = field(default_factory=dict)
    disk: dict[str, Any] = field(default_factory=dict)
    protected: dict[str, Any] = field(default_factory=dict)
    inproc: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.every = every
        self.samples: list[int] = []      # KiB
        self._stop_event = threading.Event()

    def sample(self) -> None:
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    self.samples.append(int(line.split()[1]))
        except OSError:
            pass

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()


_STAMP = re.compile(r"^\[[^\]]*\] ")
_ADDR = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")


def scan_log(path: Path, result: Result) -> None:
    """Lag lines, and unhandled exceptions: each traceback (or an ERROR line naming
    a failed handler/connection) is one incident, summarised as "what failed ->
    the exception's last line" and counted per kind."""
    windows_max = 0.0
    kinds: dict[str, int] = {}
    last_error = ""
    in_trace = False
    with open(path, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip()
            if in_trace:
                if line.startswith((" ", "Traceback")) or not line or line.startswith(
                        ("The above exception", "During handling")):
                    continue
                in_trace = False
                key = f"{last_error} -> {line[:200]}"
                kinds[key] = kinds.get(key, 0) + 1
                result.unhandled_count += 1
            if line.startswith("Traceback"):
                in_trace = True
                continue
            if " ERROR " in line[:40]:
                last_error = _ADDR.sub("<peer>", _STAMP.sub("", line))[:200]
            m = WINDOW_LINE.search(line)
            if m:
                windows_max = max(windows_max, float(m.group(2)))
            m = LAG_LINE.search(line)
            if m:
                result.lag = {"seconds": float(m.group(1)), "p50_ms": float(m.group(2)),
                              "p99_ms": float(m.group(3)), "max_ms": float(m.group(4)),
                              "samples": int(m.group(5)), "over_50ms": int(m.group(6)),
                              "over_50ms_on_cpu": int(m.group(7) or 0),
                              "over_50ms_in_loop": int(m.group(8) or 0)}
    result.unhandled = [f"{n} x {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])]
    if windows_max and not result.lag:
        result.lag = {"max_ms": windows_max}


def protected_topic_state(port: int) -> dict[str, Any]:
    """The protected topic after the storm: still there, same partitions, led by broker 0."""
    from tests.integration.cluster import WireClient
    try:
        with WireClient(port) as c:
            md = c.metadata([PROTECTED_TOPIC], version=9)
    except (OSError, ValueError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    topic = md.topics[0]
    return {"error_code": int(topic.error_code),
            "leaders": sorted((int(p.partition_index), int(p.leader_id)) for p in topic.partitions),
            "leader_epochs": sorted(int(p.leader_epoch) for p in topic.partitions)}


def run_inproc(seed: int, frames: int) -> dict[str, Any]:
    factory = FrameFactory(seed, wire=False)
    rng = random.Random(seed)
    started = time.monotonic()
    violations: dict[str, int] = {}
    examples: list[str] = []
    outcomes: dict[str, int] = {}
    for i in range(frames):
        frame = factory.frame(i)
        expect, found = check_frame(frame, rng)
        outcomes[expect.value] = outcomes.get(expect.value, 0) + 1
        for v in found:
            key = f"{v.stage}: {v.error.split(':')[0]}"
            violations[key] = violations.get(key, 0) + 1
            if len(examples) < 8:
                examples.append(f"frame {v.index} ({frame.mutation}, api {frame.api_key} "
                                f"v{frame.version}) {v.stage}: {v.error}")
    seconds = time.monotonic() - started
    return {"frames": frames, "seconds": round(seconds, 1),
            "frames_per_s": round(frames / seconds) if seconds else 0,
            "outcomes": outcomes, "violations": violations, "examples": examples}


def run(args: argparse.Namespace) -> Result:
    from tests.integration.cluster import Cluster, WireClient
    from tests.integration.zookeeper import zookeeper_server

    result = Result(seed=args.seed, frames=args.frames)
    work = Path(args.work or tempfile.mkdtemp(prefix="pybroker-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"fuzz: seed {args.seed}, {args.frames:,} frames over {args.connections} "
          f"connections; work dir {work}", flush=True)
    factory = FrameFactory(args.seed, wire=True, bombs=not args.no_bombs)
    with zookeeper_server(work / "zk") as zk:
        cluster = Cluster(zk, work, size=1, overrides={
            "log.level": args.broker_log_level, "auto.create.topics.enable": "true",
            "num.partitions": "2", "connections.max.idle.ms": "30000"})
        cluster.start()
        broker = cluster.brokers[0]
        assert broker.proc is not None
        steady = None
        sampler = RssSampler(broker.proc.pid)
        try:
            with WireClient(broker.port) as c:
                if c.create_topic(PROTECTED_TOPIC, partitions=2) not in (0, 36):
                    raise RuntimeError("could not create the protected topic")
            steady_out = work / "steady.json"
            steady = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz.steady_clients", "--bootstrap",
                 broker.bootstrap, "--topic", PROTECTED_TOPIC, "--group", PROTECTED_GROUP,
                 "--out", str(steady_out)], cwd=REPO, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(REPO)})
            time.sleep(3.0)                       # the clients join, produce, consume
            protected_before = protected_topic_state(broker.port)
            sampler.sample()
            sampler.start()
            sender = WireSender(factory, broker.port, connections=args.connections,
                                burst=args.burst, alive=lambda: broker.running)
            stats: WireStats
            try:
                stats = asyncio.run(sender.run(args.frames))
            except BrokerGone as e:
                stats = sender.stats
                result.violations.append(f"broker gone during the run: {e}")
            result.wire = {k: v for k, v in asdict(stats).items()}
            result.wire["frames_per_s"] = round(stats.rate)
            time.sleep(2.0)                       # the clients keep going after the storm
            result.broker_alive_at_end = broker.running
            if result.broker_alive_at_end:
                result.protected = protected_topic_state(broker.port)
                result.protected["before"] = protected_before
            if not result.broker_alive_at_end:
                result.crashes = 1
        finally:
            sampler.stop()
            if steady is not None:
                steady.send_signal(signal.SIGTERM)
                try:
                    steady.wait(60)
                except subprocess.TimeoutExpired:
                    steady.kill()
                    steady.wait(10)
            sampler.sample()
            cluster.stop()
        result.broker_exit_code = broker.proc.returncode
        if steady is not None and (work / "steady.json").exists():
            result.steady = json.loads((work / "steady.json").read_text())
        rss = [s / 1024 for s in sampler.samples]
        if rss:
            result.rss_mb = {"start": round(rss[0], 1), "max": round(max(rss), 1),
                             "end": round(rss[-1], 1)}
        scan_log(broker.stderr_path, result)
        disk = check_log_dirs([broker.log_dir])
        result.disk = {"segments": disk.segments, "batches": disk.batches,
                       "records": disk.records, "bytes": disk.bytes,
                       "problems": len(disk.problems or []),
                       "examples": [f"{p.segment}@{p.position}: {p.problem}"
                                    for p in (disk.problems or [])[:10]]}
    if args.inproc_frames:
        print(f"fuzz: {args.inproc_frames:,} frames in process, straight to the decoders",
              flush=True)
        result.inproc = run_inproc(args.seed, args.inproc_frames)
    judge(result, args)
    if not args.keep and not result.violations and not args.work:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return result


def judge(r: Result, args: argparse.Namespace) -> None:
    v = r.violations
    if r.crashes:
        v.append("the broker process exited during the run")
    if r.broker_exit_code not in (0, None):
        v.append(f"broker exit code {r.broker_exit_code} after SIGTERM")
    if r.unhandled_count:
        v.append(f"{r.unhandled_count} unhandled exceptions (tracebacks) in the broker log")
    if r.inproc.get("violations"):
        v.append(f"in-process decoders raised outside the contract: {r.inproc['violations']}")
    if r.disk.get("problems"):
        v.append(f"{r.disk['problems']} invalid batches/records on disk")
    st = r.steady
    if not st:
        v.append("the well-behaved clients wrote no figures")
    else:
        if st.get("delivery_errors") or st.get("acked_not_consumed") or st.get("unflushed"):
            v.append(f"well-behaved clients: {st.get('delivery_errors')} delivery errors, "
                     f"{st.get('acked_not_consumed')} acked not consumed, "
                     f"{st.get('unflushed')} unflushed")
        if st.get("delivery_ms", {}).get("max", 0) > args.max_latency_ms:
            v.append(f"well-behaved produce latency max {st['delivery_ms']['max']:.0f} ms "
                     f"> {args.max_latency_ms} ms")
    before = r.protected.get("before", {})
    if r.broker_alive_at_end and (r.protected.get("error_code") != 0
                                  or r.protected.get("leaders") != [(0, 0), (1, 0)]
                                  or r.protected.get("leader_epochs")
                                  != before.get("leader_epochs")):
        v.append(f"the protected topic changed (deleted, re-led or moved): {r.protected}")
    if not r.lag:
        v.append("no event-loop lag line in the broker log")
    elif r.lag.get("max_ms", 0) > args.max_stall_ms:
        v.append(f"event-loop stall max {r.lag['max_ms']:.1f} ms > {args.max_stall_ms} ms")
    if r.rss_mb and r.rss_mb["max"] - r.rss_mb["start"] > args.max_rss_growth_mb:
        v.append(f"RSS grew {r.rss_mb['max'] - r.rss_mb['start']:.0f} MB "
                 f"> {args.max_rss_growth_mb} MB")


def report(r: Result, args: argparse.Namespace) -> str:
    w, st, lag = r.wire, r.steady, r.lag
    lines = [
        "== fuzz results",
        f"frames sent          {w.get('frames_sent', 0):,} ({w.get('frames_per_s', 0):,}/s over "
        f"{w.get('seconds', 0):.0f} s), {w.get('bytes_sent', 0) / 1e6:.1f} MB",
        f"connections opened   {w.get('connections', 0):,} (expected closes "
        f"{w.get('expected_closes', 0):,}, early {w.get('early_closes', 0):,}, read timeouts "
        f"{w.get('timeouts', 0):,})",
        f"responses            {w.get('responses', 0):,}",
        f"mutations            {w.get('by_mutation', {})}",
        f"broker crashes       {r.crashes} (exit code after SIGTERM: {r.broker_exit_code})",
        f"unhandled exceptions {r.unhandled_count} tracebacks in the broker log",
        f"event-loop stall     p50 {lag.get('p50_ms', '?')} p99 {lag.get('p99_ms', '?')} "
        f"max {lag.get('max_ms', '?')} ms ({lag.get('over_50ms', '?')} of "
        f"{lag.get('samples', '?')} samples over 50 ms, {lag.get('over_50ms_on_cpu', '?')} of "
        f"them with the broker on CPU, {lag.get('over_50ms_in_loop', '?')} of those on the "
        f"loop thread)",
        f"broker RSS           start {r.rss_mb.get('start')} max {r.rss_mb.get('max')} "
        f"end {r.rss_mb.get('end')} MB",
        f"well-behaved         {st.get('acked', '?')} acked / {st.get('sent', '?')} sent, "
        f"{st.get('consumed', '?')} consumed, produce latency p99 "
        f"{st.get('delivery_ms', {}).get('p99', 0):.1f} max "
        f"{st.get('delivery_ms', {}).get('max', 0):.1f} ms, end-to-end p99 "
        f"{st.get('end_to_end_ms', {}).get('p99', 0):.1f} ms",
        f"protected topic      {r.protected}",
        f"disk                 {r.disk.get('segments', 0)} segments, "
        f"{r.disk.get('batches', 0):,} batches, {r.disk.get('records', 0):,} records, "
        f"{r.disk.get('problems', 0)} problems",
    ]
    for ex in r.disk.get("examples", []):
        lines.append(f"  disk: {ex}")
    for line in r.unhandled[:12]:
        lines.append(f"  log: {line}")
    if r.inproc:
        lines.append(f"in-process           {r.inproc['frames']:,} frames "
                     f"({r.inproc['frames_per_s']:,}/s), outcomes {r.inproc['outcomes']}, "
                     f"violations {r.inproc['violations'] or 0}")
        for ex in r.inproc.get("examples", []):
            lines.append(f"  decoder: {ex}")
    lines.append(f"invariant violations {len(r.violations)}")
    for v in r.violations:
        lines.append(f"  - {v}")
    lines.append(f"reproduce: .venv/bin/python -m tests.fuzz.fuzz_run --frames {args.frames} "
                 f"--seed {args.seed} --inproc-frames {args.inproc_frames} "
                 f"--connections {args.connections}"
                 f"{' --no-bombs' if args.no_bombs else ''}  (one frame: --show-frame I)")
    lines.append("machine: shared, 2 cores (broker, fuzzer and clients compete for them)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.fuzz_run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inproc-frames", type=int, default=0)
    ap.add_argument("--connections", type=int, default=24)
    ap.add_argument("--burst", type=int, default=32)
    ap.add_argument("--max-stall-ms", type=float, default=50.0)
    ap.add_argument("--max-latency-ms", type=float, default=5000.0)
    ap.add_argument("--max-rss-growth-mb", type=float, default=400.0)
    ap.add_argument("--no-bombs", action="store_true",
                    help="no compression bombs (to see what else stalls the loop)")
    ap.add_argument("--broker-log-level", default="INFO",
                    help="DEBUG adds the per-request timing lines (pybroker.request)")
    ap.add_argument("--work", default="")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--json", default="", help="write the result as JSON here")
    ap.add_argument("--show-frame", type=int, default=-1,
                    help="print frame I of this seed (hex) and its in-process outcome")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.show_frame >= 0:
        frame = FrameFactory(args.seed, wire=True).frame(args.show_frame)
        expect, found = check_frame(frame, random.Random(0))
        print(f"frame {frame.index}: api {frame.api_key} v{frame.version}, mutation "
              f"{frame.mutation}, {len(frame.data)} bytes, expect {expect.value}")
        print(frame.data.hex())
        for v in found:
            print(v.trace)
        return 0
    result = run(args)
    print(report(result, args), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(result), indent=1, default=str))
    return 1 if result.violations else 0


if __name__ == "__main__":
    sys.exit(main())
