"""aiokafka 0.14 (project venv) and aiokafka 0.12 (pinned old protocol versions:
Metadata v1, Fetch v4, Produce v7) running the same scenario script.

aiokafka 0.12 cannot share the project venv with 0.14, so a session fixture
builds a small venv for it under .cache/aiokafka-0.12/ (ordinary ``pip
install``, once; a stamp file marks it complete). A fixture rather than a
Makefile step keeps ``pytest tests/integration`` self-sufficient on a fresh
machine and the Makefile free of per-test knowledge; ``make test`` runs it the
same way.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.integration.clients.common import (PARTITIONS, Rec, all_planned, check_read_back,
                                              timestamp_probes, wait_topic_gone)
from tests.integration.cluster import REPO

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).with_name("aiokafka_scenario.py")
OLD_VENV = REPO / ".cache" / "aiokafka-0.12"
OLD_SPEC = "aiokafka[snappy,lz4,zstd]==0.12.0"


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _plan() -> tuple[dict[str, object], list[Rec]]:
    planned = all_planned()
    flat = [r for recs in planned.values() for r in recs]
    plan = {
        "partitions": PARTITIONS,
        "codecs": {c: [{"partition": r.partition, "key": _b64(r.key), "value": _b64(r.value),
                        "headers": [[k, _b64(v)] for k, v in r.headers], "timestamp": r.timestamp}
                       for r in recs] for c, recs in planned.items()},
        # probes chosen from planned (partition, timestamp); answers checked below
        "probes": [[p, ts] for p, ts, _ in timestamp_probes([r for r in flat])],
    }
    return plan, flat


def _rec(d: dict[str, object]) -> Rec:
    unb = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
    return Rec(int(d["partition"]), unb(d["key"]), unb(d["value"]) or b"",  # type: ignore[arg-type]
               tuple((k, unb(v) or b"") for k, v in d["headers"]),  # type: ignore[union-attr]
               int(d["timestamp"]), int(d["offset"]))  # type: ignore[arg-type]


def run_scenario(python: str, bootstrap: str, port: int, topic: str) -> str:
    plan, _ = _plan()
    res = subprocess.run([python, str(SCRIPT), bootstrap, topic], input=json.dumps(plan),
                         capture_output=True, text=True, timeout=180, cwd=REPO)
    assert res.returncode == 0, f"scenario failed ({res.returncode}):\n{res.stderr[-4000:]}"
    out = json.loads(res.stdout.strip().splitlines()[-1])
    produced = [_rec(d) for d in out["produced"]]
    for d in out["produced"]:
        assert d["md_partition"] == d["partition"]
    consumed = sorted((_rec(d) for d in out["consumed"]), key=lambda r: (r.partition, r.offset))
    check_read_back(produced, consumed)
    want = {(p, ts): w for p, ts, w in timestamp_probes(produced)}
    for p, ts, got in out["times"]:
        assert got == want[(p, ts)], f"offsets_for_times partition {p} ts {ts}: got {got}, want {want[(p, ts)]}"
    wait_topic_gone(port, topic)
    return str(out["version"])


@pytest.fixture(scope="session")
def old_aiokafka_python() -> str:
    py = OLD_VENV / "bin" / "python"
    stamp = OLD_VENV / ".installed-0.12.0"
    if not stamp.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(OLD_VENV)
        res = subprocess.run([str(py), "-m", "pip", "install", "--no-input", "--quiet",
                              "--disable-pip-version-check", OLD_SPEC],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"pip install {OLD_SPEC} failed:\n{res.stdout}\n{res.stderr}"
        stamp.touch()
    return str(py)


def test_aiokafka_current(bootstrap: str, port: int, topic: str) -> None:
    version = run_scenario(sys.executable, bootstrap, port, topic)
    assert version.startswith("0.14"), version


def test_aiokafka_0_12(old_aiokafka_python: str, bootstrap: str, port: int, topic: str) -> None:
    version = run_scenario(old_aiokafka_python, bootstrap, port, topic)
    assert version == "0.12.0", version
