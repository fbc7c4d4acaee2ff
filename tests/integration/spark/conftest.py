"""Fixtures for the Spark tests: one SparkSession per test module (local[2], no
UI, small shuffles), stopped at the end, and one broker (module scope) on the
shared ZooKeeper fixture.

Spark's Python workers must import this checkout (``spark_jobs``, ``protocol``,
``broker``): the repository root goes on PYTHONPATH before the session starts,
and the workers run this interpreter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import Cluster, MakeCluster

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import spark_jobs

    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    work = tmp_path_factory.mktemp("spark")
    (work / "jvm-tmp").mkdir()      # the JVM's own temp dirs (spark-*, artifacts-*), not /tmp
    session = (SparkSession.builder.master("local[2]").appName("pybroker-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.local.dir", str(work / "local"))
               .config("spark.sql.warehouse.dir", str(work / "warehouse"))
               .config("spark.driver.extraJavaOptions",
                       f"-Dderby.system.home={work} -Djava.io.tmpdir={work / 'jvm-tmp'}")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def broker(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("brokers", overrides={"log.level": "WARNING"})
