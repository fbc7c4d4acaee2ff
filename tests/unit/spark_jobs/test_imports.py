"""spark_jobs' own rules: the modules that need neither Spark nor Arrow import
without them (executors and the driver's light paths load no JVM bridge). Cycles and
what spark_jobs may import are checked project-wide (tests/unit/test_import_cycles.py,
tests/unit/test_layering.py). And the package map names every module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import spark_jobs
from tests.unit.test_layering import REPO

LIGHT = ("spark_jobs.segments", "spark_jobs.replay_topic", "spark_jobs.kafka_requests",
         "spark_jobs.kafka_io")


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
