"""CoordinatorPartitions: the served / loading / epoch bookkeeping both coordinators use."""

from __future__ import annotations

from coordinator.runtime.partitions import CoordinatorPartitions
from protocol.errors import ErrorCode


def test_leadership_loads_and_fencing() -> None:
    c = CoordinatorPartitions("__t")
    assert c.status(0) == ErrorCode.NOT_COORDINATOR
    assert c.become_leader(0, 3) is True                 # start a load
    assert c.become_leader(0, 4) is False                # the load continues at epoch 4
    assert c.status(0) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert c.loaded(0, 3) is True and c.owned == {0: 4}  # served at the newest epoch seen
    assert c.status(0) is None
    assert c.become_leader(0, 2) is False and c.owned == {0: 4}   # stale: ignored
    # newer, still leader (an ISR change): no reload, the coordinator epoch stays
    assert c.become_leader(0, 6) is False and c.owned == {0: 4} and c.epochs[0] == 6
    assert c.resign(0, 5) is False and c.status(0) is None        # stale resignation
    assert c.resign(0, 7) is True and c.all() == []
    assert c.become_leader(0, 6) is False                          # older than the resign


def test_a_load_finishing_after_a_resignation_is_not_installed() -> None:
    c = CoordinatorPartitions("__t")
    assert c.become_leader(1, 0)
    assert c.resign(1, None)
    assert c.loaded(1, 0) is False and c.owned == {}
