"""The transactional fault campaign, short (tests/fault/txn_campaign.py is the long
one, ``make fault-txn``): consume-transform-produce over 4,000 records on three
brokers at RF 3 while the transaction coordinator's broker and a partition leader are
each killed -9 once; the output read read_committed holds every input exactly once,
and the read_committed observer saw no aborted or uncommitted record."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault.txn_campaign import run


def test_consume_transform_produce_survives_coordinator_and_leader_kills(tmp_path: Path
                                                                         ) -> None:
    from broker.zookeeper_runner import java_major

    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    outcome = run(tmp_path, records=4000, kills=1, batch=100, timeout=240, log=False)
    assert outcome.ok, outcome.summary()
    assert outcome.kills == {"coordinator": 1, "leader": 1}, outcome.summary()
    assert outcome.commits >= 4000 // 100 // 2, outcome.summary()  # the work was transactional
    assert outcome.report.committed == 4000
