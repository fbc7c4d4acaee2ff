"""One broker per test module (on the session's ZooKeeper, in its own chroot)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.integration.cluster import Cluster, MakeCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    return make_cluster("clients", overrides={"auto.create.topics.enable": "false"})


@pytest.fixture(scope="module")
def bootstrap(cluster: Cluster) -> str:
    return cluster.bootstrap


@pytest.fixture(scope="module")
def port(cluster: Cluster) -> int:
    return cluster.brokers[0].port


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:6]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, attach the tail of the broker's log to the report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed and "cluster" in getattr(item, "fixturenames", ()):
        c = item.funcargs.get("cluster")  # type: ignore[attr-defined]
        if isinstance(c, Cluster):
            for b in c.brokers:
                rep.sections.append((f"broker {b.broker_id} log", b.tail(40)))
