"""The short version of the client campaign (tests/fault/client_campaign.py, part of
``make fault``) for ``make test``: one partition leader cut off from ZooKeeper and the
other brokers while the clients still reach it, with every stock client producing on
its default settings (librdkafka idempotent and not, the Java client, kafka-python,
aiokafka); each must write every partition again within session timeout + 5 s of the
cut and 5 s of the heal, and nothing acknowledged may be lost (nor duplicated by the
idempotent ones). Before the fence sweep (broker/replication/leader_fence.py) every one
of them wrote nothing to the cut leader's partitions until the heal.

Needs root (network namespaces), Java 17 and ZooKeeper's jars.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault import client_campaign
from tests.fault.client_campaign import Figures
from tests.fault.netns_cluster import skip_reason
from tests.fault.produce_loops import CLIENTS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_figures_count_a_partition_never_written_as_a_miss() -> None:
    f = Figures()
    f.add("leader-isolated", "java", 0, 5.2, 0.1, fault_target=9.0)
    f.add("leader-isolated", "java", 1, None, 0.1, fault_target=9.0)
    f.add("leader-isolated", "aiokafka", 0, 9.5, 6.0, fault_target=9.0)
    assert len(f.misses) == 3
    assert "round 1 java: from the cut none" in f.misses[0]
    assert "from the cut 9.50s" in f.misses[1] and "from the heal 6.00s" in f.misses[2]
    table = f.table()
    assert "none / 1 of 2" in table                 # java: one of its two faults unwritten
    assert "   9.50 /   9.50" in table              # aiokafka's median / max


def test_every_client_leaves_an_isolated_leader(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    rc = client_campaign.run(["leader-isolated"], list(CLIENTS), rounds=1, session_ms=4000,
                             rate=60.0, seed=1, work=tmp_path / "campaign")
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out[-6000:]
    for c in CLIENTS:
        assert f"leader-isolated      {c:22}  1" in out
