"""Throughput of one broker driven by a C client (rdkperf on librdkafka), so that the
client is not the bound, with the native record path and with the pure-Python fallback
(issue 28).

    python bench/throughput.py [--runs 3] [--paths native,python] [--partitions 1]
                               [--producers 1]
                               [--loads produce-100,produce-1k,consume-1k,consume-100]
                               [--rdkperf PATH] [--broker-config key=value ...]

rdkperf is ``../shared/bench/rdkperf.c``, built by ``sh ../shared/bench/build-rdkperf.sh``
(about 4 minutes once; the path it prints is what ``--rdkperf`` takes; by default
``~/.cache/rdkperf/rdkperf``, built there when missing). Per path (``native``: the C
record walk, the default; ``python``: PYBROKER_NATIVE=0 in the broker's environment) a
ZooKeeper and one broker are started; per run and record size a fresh topic of
``--partitions`` partitions (replication factor 1):

- produce-<size>: rdkperf produce, acks=1, linger 5 ms, 1 MB batches, no compression,
  N records of <size> bytes, every delivery report awaited;
- consume-<size>: rdkperf consume of those N records from offset 0 (no group);

with ``--producers P`` (> 1) the produce loads go through P producer connections at once
instead of one: ``bench/rdkconns.c`` (built beside rdkperf, against the same librdkafka;
the same producer settings, N / P records each, producer i writing partition i mod
``--partitions``) -- issue 28's scale figure with 500 connections;

and for each the broker's CPU time (user + system, all threads, /proc/<pid>/stat) over
the load, as CPU % of one core and seconds per GB moved, beside rdkperf's own CPU %
(on a 2-core machine a client near 100-150 % is the bound, not the broker). Figures are medians over the
runs, with the native/python ratio. Issue 28's targets: 100 B produce >= 2.5 M msg/s;
1 KiB produce >= 500 MB/s; 1 KiB consume >= 1.5 GB/s; 100 B consume >= 2 M msg/s;
<= 1.2 s of broker CPU per GB.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _env import (REPO, add_broker_config_option, broker_configs,  # type: ignore[import-not-found]  # noqa: E501
                  command_line, cpu_seconds, create_topic, delete_topic, one_broker)

SIZES = {"100": 100, "1k": 1024}
COUNTS = {100: 4_000_000, 1024: 1_000_000}        # records per load
TARGETS = {("produce", 100): ("msg/s", 2.5e6), ("produce", 1024): ("MB/s", 500.0),
           ("consume", 1024): ("MB/s", 1500.0), ("consume", 100): ("msg/s", 2e6)}
CPU_PER_GB_TARGET = 1.2
DEFAULT_RDKPERF = Path.home() / ".cache" / "rdkperf" / "rdkperf"


def rdkperf_binary(given: str | None) -> Path:
    if given:
        return Path(given)
    if not DEFAULT_RDKPERF.exists():
        out = subprocess.run(["sh", str(REPO.parent / "shared" / "bench" / "build-rdkperf.sh")],
                             check=True, capture_output=True, text=True).stdout
        return Path(out.strip().splitlines()[-1])
    return DEFAULT_RDKPERF


def c_client_beside(rdkperf: Path, name: str) -> Path:
    """bench/<name>.c built beside rdkperf, against the same librdkafka (rebuilt when
    the source is newer): rdklat (bench/latency.py), rdkconns (--producers)."""
    cache = rdkperf.parent
    out = cache / name
    source = REPO / "bench" / f"{name}.c"
    if not out.exists() or out.stat().st_mtime < source.stat().st_mtime:
        lib = cache / "package" / "deps" / "librdkafka" / "src"
        subprocess.run(["cc", "-O2", f"-I{cache / 'inc'}", "-o", str(out), str(source),
                        f"-L{lib}", "-lrdkafka", "-lpthread", f"-Wl,-rpath,{lib}"], check=True)
    return out


def fresh_page_write_cost(directory: Path, megabytes: int = 1024) -> tuple[float, float]:
    """CPU seconds per GB of writing ``megabytes`` MiB in 1 MiB pwrites into a new file in
    ``directory`` (the broker's filesystem), then rewriting the same pages: (new file,
    pages in use). The kernel's share of a produce load's broker CPU is such writes; on
    a virtual machine that hands freed pages back to its host (free page reporting) the
    first is several times the second (each fresh page faults on the host too), and it
    moves the broker's s/GB with it -- printed beside the figures so they can be read."""
    path = directory / "fresh-page-calibration.bin"
    block = b"\x01" * (1 << 20)
    out = []
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        for _ in range(2):
            c0 = time.process_time()
            for i in range(megabytes):
                os.pwrite(fd, block, i << 20)
            out.append((time.process_time() - c0) * 1024 / megabytes)
    finally:
        os.close(fd)
        path.unlink()
    return out[0], out[1]


def run_load(argv: list[str], n: int, size: int, pid: int) -> dict[str, float]:
    """One client run (``argv``: rdkperf or rdkconns, which print the same line) of
    ``n`` records of ``size`` bytes; -> its figures and the broker's CPU over it."""
    mode = "consume" if "consume" in argv else "produce"
    (user0, sys0), t0 = cpu_seconds(pid), time.perf_counter()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    wall, (user1, sys1) = time.perf_counter() - t0, cpu_seconds(pid)
    user, kernel = user1 - user0, sys1 - sys0
    cpu = user + kernel
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = kids.ru_utime + kids.ru_stime - kids0.ru_utime - kids0.ru_stime
    if res.returncode != 0:
        raise SystemExit(f"{Path(argv[0]).name} {mode} failed ({res.returncode}): "
                         f"{res.stderr[-2000:]}")
    words = res.stdout.split()      # "<mode> <msg/s> msg/s <MB/s> MB/s errors=<n> ..."
    errors = int(words[5].split("=")[1])
    if errors:
        raise SystemExit(f"{Path(argv[0]).name} {mode}: {errors} errors: {res.stdout}")
    gb = n * size / 1e9
    return {"msg/s": float(words[1]), "MB/s": float(words[3]), "cpu%": 100 * cpu / wall,
            "cpu s/GB": cpu / gb, "user s/GB": user / gb, "sys s/GB": kernel / gb,
            "client%": 100 * client / wall}


def produce_argv(binary: Path, args: argparse.Namespace, bootstrap: str, topic: str,
                 n: int, size: int) -> list[str]:
    """rdkperf produce, or with ``--producers`` P > 1 rdkconns: P producer connections
    (bench/rdkconns.c, built beside rdkperf), the same settings otherwise."""
    if args.producers > 1:
        return [str(c_client_beside(binary, "rdkconns")), bootstrap, topic,
                str(args.partitions), str(args.producers), str(n), str(size)]
    return [str(binary), "produce", bootstrap, topic, str(n), str(size),
            str(args.partitions), "1"]


# (new file, pages in use) s/GB of fresh_page_write_cost, one per broker started
CALIBRATION: list[tuple[float, float]] = []


def measure(path: str, args: argparse.Namespace, binary: Path
            ) -> dict[tuple[str, int], list[dict[str, float]]]:
    if path == "python":
        os.environ["PYBROKER_NATIVE"] = "0"
    else:
        os.environ.pop("PYBROKER_NATIVE", None)
    loads = [(load.split("-")[0], SIZES[load.split("-")[1]]) for load in args.loads.split(",")]
    out: dict[tuple[str, int], list[dict[str, float]]] = {load: [] for load in loads}
    with one_broker(broker_configs(args)) as broker:
        assert broker.pid is not None
        fresh, in_use = fresh_page_write_cost(broker.dir)
        CALIBRATION.append((fresh, in_use))
        for _ in range(args.runs):
            for size in sorted({s for _, s in loads}):
                n = COUNTS[size]
                topic = create_topic(broker.bootstrap, args.partitions, prefix=f"tp{size}")
                try:
                    figures = run_load(produce_argv(binary, args, broker.bootstrap, topic,
                                                    n, size), n, size, broker.pid)
                    if ("produce", size) in out:
                        out[("produce", size)].append(figures)
                    if ("consume", size) in out:
                        out[("consume", size)].append(run_load(
                            [str(binary), "consume", broker.bootstrap, topic, str(n),
                             str(size), str(args.partitions), "1"], n, size, broker.pid))
                finally:
                    delete_topic(broker.bootstrap, topic)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--paths", default="native,python")
    ap.add_argument("--loads", default="produce-100,produce-1k,consume-1k,consume-100")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--producers", type=int, default=1,
                    help="producer connections (> 1: bench/rdkconns.c instead of rdkperf)")
    ap.add_argument("--rdkperf")
    add_broker_config_option(ap)
    args = ap.parse_args()
    if any(n % args.producers for n in COUNTS.values()):
        ap.error(f"--producers must divide the record counts {sorted(COUNTS.values())}")
    binary = rdkperf_binary(args.rdkperf)
    results = {path: measure(path, args, binary) for path in args.paths.split(",")}
    print(f"# {command_line()}")
    print(f"# one broker, {args.partitions} partition(s), {args.producers} producer "
          f"connection(s), acks=1, medians of {args.runs}")
    medians: dict[str, dict[tuple[str, int], dict[str, float]]] = {}
    for path, loads in results.items():
        medians[path] = {load: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                         for load, runs in loads.items() if runs}
        for (mode, size), m in medians[path].items():
            unit, target = TARGETS.get((mode, size), ("MB/s", 0.0))
            verdict = (f"  [target {unit} >= {target:g}: "
                       f"{'met' if m[unit] >= target else 'NOT met'}]") if target else ""
            cpu = (f"  [target <= {CPU_PER_GB_TARGET:g}: "
                   f"{'met' if m['cpu s/GB'] <= CPU_PER_GB_TARGET else 'NOT met'}]")
            print(f"{path:<7} {mode}-{size:<5} {m['msg/s'] / 1e6:7.3f} M msg/s "
                  f"{m['MB/s']:9.1f} MB/s  broker CPU {m['cpu%']:5.0f} % "
                  f"{m['cpu s/GB']:6.2f} s/GB (user {m['user s/GB']:.2f}, "
                  f"sys {m['sys s/GB']:.2f}){cpu}{verdict}  client CPU {m['client%']:4.0f} %",
                  flush=True)
    fresh = statistics.median(c[0] for c in CALIBRATION)
    in_use = statistics.median(c[1] for c in CALIBRATION)
    print(f"# this machine: 1 GB of 1 MiB pwrites into a new file costs {fresh:.2f} s of "
          f"CPU, into pages already in use {in_use:.2f} s (the kernel's share of a "
          f"produce load's broker CPU; fresh pages cost more on a VM that hands freed "
          f"memory back to its host)")
    if "native" in medians and "python" in medians:
        for load, m in medians["native"].items():
            p = medians["python"].get(load)
            if p:
                print(f"native/python {load[0]}-{load[1]}: {m['msg/s'] / p['msg/s']:.2f}x "
                      f"throughput, {m['cpu s/GB'] / p['cpu s/GB']:.2f}x CPU per GB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
