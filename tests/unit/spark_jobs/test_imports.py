"""spark_jobs' own import rules (the package docstring's map): no cycle among its modules,
function-local imports included; Kafka requests only through ``client``; no broker,
controller or tools; the modules that need neither Spark nor Arrow import without them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import spark_jobs
from tests.unit.test_layering import REPO, imported_names, module_name, within

FORBIDDEN = ("broker", "controller", "tools",
             "protocol.spec", "protocol.api_keys")   # requests are built in client/ only
LIGHT = ("spark_jobs.segments", "spark_jobs.replay_topic", "spark_jobs.kafka_requests",
         "spark_jobs.kafka_io")


def spark_modules() -> dict[str, set[str]]:
    out = {}
    for path in sorted((REPO / "spark_jobs").glob("*.py")):
        module = module_name(path)
        out[module] = imported_names(path.read_text(encoding="utf-8"), module,
                                     path.name == "__init__.py")
    return out


def graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """module -> the spark_jobs modules it imports (``from spark_jobs import x`` counts as x)."""
    inner = [m for m in modules if m != "spark_jobs"]
    return {m: {t for t in inner if t != m and any(within(n, [t]) for n in names)}
            for m, names in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}     # 1 on the path, 2 done
    path: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        path.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return path[path.index(v):] + [v]
            if v not in state and (found := visit(v)):
                return found
        path.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_no_import_cycle_among_spark_jobs_modules() -> None:
    edges = graph(spark_modules())
    assert "spark_jobs.segments" in edges["spark_jobs.replay_parquet"]
    assert cycle(edges) is None


def test_cycle_finder_finds_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_only_client_storage_and_protocol_records_of_ours() -> None:
    bad = [f"{m} imports {n}" for m, names in spark_modules().items()
           for n in sorted(names) if within(n, FORBIDDEN)]
    assert bad == []


def test_light_modules_import_without_spark_or_arrow() -> None:
    code = ("import sys\n"
            + "".join(f"import {m}\n" for m in LIGHT)
            + "print(sorted(m for m in ('pyspark', 'pyarrow', 'numpy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_module_names_are_what_the_map_says() -> None:
    doc = spark_jobs.__doc__ or ""
    modules = {p.stem for p in Path(REPO / "spark_jobs").glob("*.py") if p.stem != "__init__"}
    assert [m for m in sorted(modules) if f"{m}.py" not in doc] == []
