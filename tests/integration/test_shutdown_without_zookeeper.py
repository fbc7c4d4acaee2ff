"""SIGTERM stops a broker whose ZooKeeper is gone, within a bound.

A request to ZooKeeper waits for a connection for ever (kazoo queues it), so a
shutdown step that reads or writes ZooKeeper -- the controlled shutdown's read of
/controller, the controller's delete of /controller -- kept a broker whose ZooKeeper
had been killed first running indefinitely (seen for 45 min). Each such step now waits
``zookeeper.connection.timeout.ms`` at most, as Kafka's ZooKeeperClient does, and
the shutdown goes on: the flush, the checkpoints and the clean-shutdown marker.

Two brokers (one of them the controller) on a ZooKeeper of the test's own, killed
with SIGKILL; then SIGTERM to both: each exits 0 within 15 s (the controller waits
twice the 2 s connection timeout) and says in its log what it stopped waiting for.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster
from tests.integration.multi import wait_until
from tests.integration.zookeeper import PIDS, zookeeper_server

pytestmark = pytest.mark.integration

CONNECTION_TIMEOUT_MS = 2000
EXIT_WITHIN_S = 15.0
SEE_THE_DROP_S = 10.0


def wait_connection_lost(c: Cluster) -> None:
    """Until every broker logged that its ZooKeeper connection is lost (controller/zk.py,
    on kazoo's SUSPENDED). Only from then on does a ZooKeeper request wait for a
    connection, so that the shutdown steps time out as asserted; a request made while
    the client still believes it is connected fails with ConnectionLoss when the drop is
    noticed instead. A fixed 1 s sleep was not always enough for a loaded machine to
    schedule the brokers' client threads."""
    wait_until(lambda: all("ZooKeeper connection lost" in b.log_text() for b in c.brokers),
               SEE_THE_DROP_S, "every broker to see its ZooKeeper connection drop")


def test_sigterm_stops_brokers_whose_zookeeper_was_killed(tmp_path: Path) -> None:
    with zookeeper_server(tmp_path / "zk") as zk:
        c = Cluster(zk, tmp_path / "cluster", 2, overrides={
            "zookeeper.session.timeout.ms": "6000",
            "zookeeper.connection.timeout.ms": str(CONNECTION_TIMEOUT_MS)})
        try:
            c.start()
            os.kill(PIDS[zk], signal.SIGKILL)
            wait_connection_lost(c)
            for b in c.brokers:
                assert b.proc is not None
                b.proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            for b in c.brokers:
                assert b.proc is not None
                left = EXIT_WITHIN_S - (time.monotonic() - started)
                try:
                    code = b.proc.wait(max(left, 0.1))
                except subprocess.TimeoutExpired as e:
                    raise AssertionError(
                        f"broker {b.broker_id} still running {EXIT_WITHIN_S:.0f} s after "
                        f"SIGTERM with ZooKeeper gone:\n{b.tail(30)}") from e
                assert code == 0, b.tail(30)
            logs = [b.log_text() for b in c.brokers]
            assert all("shut down completed" in text for text in logs)
            assert all("controlled shutdown: ZooKeeper did not answer" in text
                       for text in logs), [t[-2000:] for t in logs]
            assert any("could not delete /controller: ZooKeeper did not answer" in text
                       for text in logs)
        finally:
            c.stop()
