"""The replication throttle rates of a broker's own dynamic entry onto its quotas
(``leader.replication.throttled.rate`` / ``follower.replication.throttled.rate``,
KIP-73; broker/replication/throttle.py). Absent or unparsable: no throttle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.dynamic_config.keys import check_rate
from broker.replication.throttle import FOLLOWER, FOLLOWER_RATE, LEADER, LEADER_RATE, UNLIMITED
from broker.security.reconfigure import ReconfigureError

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost


def apply_rates(broker: DynamicConfigHost, dynamic: dict[str, str]) -> None:
    """Set the broker's replication quotas (if it has them yet) from its own entry."""
    quotas = broker.replication_quotas      # empty until Broker.start installs them
    if not quotas:
        return
    quotas[LEADER].update_quota(_rate(dynamic, LEADER_RATE))
    quotas[FOLLOWER].update_quota(_rate(dynamic, FOLLOWER_RATE))


def _rate(dynamic: dict[str, str], key: str) -> int:
    value = dynamic.get(key)
    try:
        return check_rate(key, value) if value is not None else UNLIMITED
    except ReconfigureError:
        return UNLIMITED    # a value stored by hand that does not parse: no throttle
