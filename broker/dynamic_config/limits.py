"""Per-listener connection limits as dynamic configs: ``listener.name.<l>.max.connections``
onto the running listeners' connection quotas.

The effective config carries each listener's limit in its listener overrides
(layers.effective_config: per broker > cluster default > server.properties), which
KafkaServer.start reads when a listener opens; ``apply_listener_limits`` (from
live.refresh) sets it on the listeners already open. A listener without the key has
no limit of its own (the broker-wide max.connections still holds).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.dynamic_config.layers import LISTENER_LIMIT
from broker.network.connection_quotas import UNLIMITED
from broker.security.reconfigure import PREFIX

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost

log = logging.getLogger(__name__)


def apply_listener_limits(broker: DynamicConfigHost) -> None:
    """Set each open listener's own connection limit from ``broker.config``."""
    quotas = broker.network_limits.quotas
    overrides = broker.config.listener_overrides
    raised = False
    for listener, old in list(quotas.listener_max.items()):
        raw = overrides.get(f"{PREFIX}{listener.lower()}.{LISTENER_LIMIT}")
        limit = UNLIMITED if raw is None else int(raw)
        if old != limit:
            quotas.add_listener(listener, limit)      # keeps its count, sets its limit
            raised = raised or limit > old
            log.info("listener %s: max.connections %s (dynamic config)", listener,
                     "unlimited" if limit >= UNLIMITED else limit)
    if raised:      # an accept loop waiting at the old limit may go on now (ConnectionQuotas
        quotas.wake_slot_waiters()     # wakes waiters itself only when a connection ends)
