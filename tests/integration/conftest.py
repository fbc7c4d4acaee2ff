"""Shared integration fixtures: a real ZooKeeper server (module scope).

Started through broker.zookeeper_runner (jars from a local install or pyspark),
on a free 127.0.0.1 port with a temporary dataDir; stopped by its pid.
Yields "127.0.0.1:PORT".
"""

from __future__ import annotations

from typing import Iterator

import pytest

from broker.zookeeper_runner import java_major
from tests.integration.zookeeper import zookeeper_server


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    with zookeeper_server(tmp_path_factory.mktemp("zookeeper")) as connect:
        yield connect
