"""Shared integration fixtures (module scope):

* ``zookeeper``: a real ZooKeeper server, started through broker.zookeeper_runner (jars
  from a local install or pyspark) on a free 127.0.0.1 port with a temporary dataDir,
  stopped by its pid; yields "127.0.0.1:PORT".
* ``make_cluster``: the one way a module starts its brokers --
  ``make_cluster("name", size, overrides={...})`` returns a started ``Cluster`` on that
  ZooKeeper; every cluster made is stopped when the module ends. Its type is
  ``tests.integration.cluster.MakeCluster``. ``make_fresh_cluster`` (function scope) is
  the same for clusters one test owns: stopped when that test ends.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Iterator

import pytest

from broker.zookeeper_runner import java_major
from tests.integration.cluster import Cluster, MakeCluster
from tests.integration.zookeeper import zookeeper_server


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    with zookeeper_server(tmp_path_factory.mktemp("zookeeper")) as connect:
        yield connect


def _factory(zookeeper: str, mktemp: Callable[[str], Path]) -> Iterator[MakeCluster]:
    """A cluster factory over ``zookeeper``; when the generator ends, every cluster it
    made is stopped, the newest first, each stop on its own so that one failing does
    not leave the others running; the first error is raised once all were stopped."""
    made: list[Cluster] = []

    def make(name: str, size: int = 1, *, start: bool = True, timeout: float = 40.0,
             **cluster_kwargs: Any) -> Cluster:
        c = Cluster(zookeeper, mktemp(name), size, **cluster_kwargs)
        made.append(c)          # before start: a start that fails half-way is stopped too
        if start:
            c.start(timeout)
        return c

    yield make

    first: BaseException | None = None
    for c in reversed(made):
        try:
            c.stop()
        except BaseException as e:  # noqa: BLE001 - stop the others, then raise the first
            if first is None:
                first = e
        for b in c.brokers:     # a broker that died on its own: its last words
            if b.proc is not None and b.proc.returncode not in (0, None):
                print(f"broker {b.broker_id} exited with {b.proc.returncode}\n{b.tail()}")
    if first is not None:
        raise first


@pytest.fixture(scope="module")
def make_cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[MakeCluster]:
    """The module's cluster factory:

        make_cluster(name, size=1, *, start=True, timeout=40.0, **cluster_kwargs) -> Cluster

    builds ``Cluster(zookeeper, tmp_path_factory.mktemp(name), size, **cluster_kwargs)``
    (``overrides``, ``chroot``, ``first_id``, ``listeners``), starts it with ``timeout``
    unless ``start=False`` (the caller then adjusts the brokers or ZooKeeper and calls
    ``start`` itself) and returns it. When the module ends every cluster made is stopped
    (``_factory``). Stopping a cluster earlier (``c.stop()``) is fine: stopping it again
    is a no-op."""
    yield from _factory(zookeeper, tmp_path_factory.mktemp)


@pytest.fixture
def make_fresh_cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[MakeCluster]:
    """``make_cluster``'s twin for one test: the clusters it makes are stopped when the
    test ends (a test that needs a cluster of its own: kills, pauses, a config no other
    test of the module shares)."""
    yield from _factory(zookeeper, tmp_path_factory.mktemp)
