"""Shared fault-test fixtures: ``zk``, a real ZooKeeper server on 127.0.0.1 for one
module (tests/fault/cluster_faults.zookeeper: jars from a local install or pyspark;
stopped by its pid). Tests on virtual hosts start their own (tests/fault/zk_ensemble.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker.zookeeper_runner import java_major
from tests.fault.cluster_faults import zookeeper


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    with zookeeper(tmp_path_factory.mktemp("zk")) as connect:
        yield connect
