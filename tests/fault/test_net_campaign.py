"""The short version of ``make fault`` (tests/fault/net_campaign.py) for ``make test``:
a few schedules on virtual hosts — one broker's ZooKeeper session expired, the
ensemble's leader killed, a failing disk — under the mixed queue load, then the checker, the replicas on disk and the
availability figures (printed; the long campaign gates on them). A partition leader cut off from ZooKeeper
and its peers is tests/fault/test_client_campaign.py's fault, with every stock client.

Needs root (network namespaces, loop-mounted ext4), Java 17 and ZooKeeper's jars.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault import net_campaign
from tests.fault.disk_faults import disk_skip_reason
from tests.fault.netns_cluster import skip_reason

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ["session-expire", "zk-leader-killed", "disk-fail"]


def test_schedule_seeds_cover_each_kind_and_encode_it() -> None:
    seeds = net_campaign.schedule_seeds(7, 100, net_campaign.KIND_NAMES)
    kinds = [net_campaign.kind_of(s) for s in seeds]
    assert len(seeds) == 100 and len(set(seeds)) == 100
    assert min(kinds.count(k) for k in net_campaign.KIND_NAMES) >= 5
    assert seeds == net_campaign.schedule_seeds(7, 100, net_campaign.KIND_NAMES)
    short = [net_campaign.kind_of(s) for s in net_campaign.schedule_seeds(3, len(KINDS), KINDS)]
    assert sorted(short) == sorted(KINDS)


def test_short_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reason = skip_reason() or disk_skip_reason()
    if reason:
        pytest.skip(reason)
    seeds = net_campaign.schedule_seeds(1, len(KINDS), KINDS)
    rc = net_campaign.run(seeds, partitions=6, rate=100.0, check_every=1, disk_mb=128,
                          gate=False, work=tmp_path / "campaign")
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out[-6000:]
    assert f"# schedules {len(KINDS)}/{len(KINDS)}" in out
    for k in KINDS:
        assert f": {k}" in out
