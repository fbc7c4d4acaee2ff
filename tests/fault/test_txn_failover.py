"""The transactional fault campaign, short (tests/fault/txn_campaign.py is the long
one, ``make fault-txn``): consume-transform-produce over 4,000 records on three
brokers at RF 3 while the transaction coordinator's broker and a partition leader are
each killed -9 once; the output read read_committed holds every input exactly once,
and the read_committed observer saw no aborted or uncommitted record.

The liveness flake of earlier sessions (about one run in ten on a loaded 2-core
machine, the processors stopped committing for the watchdog's 120 s after a kill) was
librdkafka's: send_offsets_to_transaction can block past its own timeout when the group
coordinator went down (confluentinc/librdkafka#5456 and #5511, open upstream; caught here
with the stuck thread's stack while the brokers logged no error). The processors now run each
transactional call bounded and abandon a hung producer for a new incarnation
(tests/fault/txn_workload.py, ``_bounded``); the outcome counts such calls. A stalled run
for another reason proves nothing either way about exactly-once for the inputs it never
processed, so it is still reported as a warning (with its log) and the campaign runs again
with the next seed, up to three seeds; a run with any safety anomaly (duplicate, foreign,
aborted or uncommitted read, phantom) fails at once, stalled or not.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.fault.txn_campaign import Outcome, run


def _safety_anomalies(outcome: Outcome) -> list[str]:
    r = outcome.report
    return [f"{name} {len(got)}" for name, got in (
        ("duplicates", r.duplicates), ("foreign", r.foreign), ("G1a", r.g1a),
        ("uncommitted reads", r.uncommitted), ("phantom reads", r.phantom)) if got]


def _stalled(outcome: Outcome) -> bool:
    return any(e.startswith("no input committed for") for e in outcome.errors)


def test_consume_transform_produce_survives_coordinator_and_leader_kills(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from broker.zookeeper_runner import java_major

    if (java_major("java") or 0) < 17:
        pytest.skip("Java 17+ is needed to run ZooKeeper")
    for seed in (1, 2, 3):
        # the campaign's log (kills, retries, stalls) is shown by pytest when this fails
        outcome = run(tmp_path / f"seed-{seed}", records=4000, kills=1, seed=seed, batch=100,
                      timeout=240, log=True)
        assert not _safety_anomalies(outcome), outcome.summary()
        if not _stalled(outcome):
            break
        campaign_log = capsys.readouterr().out.splitlines()[-60:]   # kills, retries, stalls
        warnings.warn(f"transactional campaign seed {seed} stalled (liveness, see the "
                      f"module docstring):\n{outcome.summary()}\n" + "\n".join(campaign_log),
                      stacklevel=1)
    assert outcome.ok, outcome.summary()
    assert outcome.kills == {"coordinator": 1, "leader": 1}, outcome.summary()
    assert outcome.commits >= 4000 // 100 // 2, outcome.summary()  # the work was transactional
    assert outcome.report.committed == 4000
