"""Controller election through the ephemeral /controller znode (Kafka's
KafkaController.elect): read /controller; if nobody holds it, try to create it
together with /controller_epoch + 1 in one transaction. The winner's epoch and
the /controller_epoch znode version fence every later write it makes.
"""

from __future__ import annotations

import logging

from controller.errors import ControllerMovedError
from controller.zk import ClusterStore

log = logging.getLogger("pybroker.controller")


async def try_elect(store: ClusterStore, broker_id: int) -> tuple[int | None, tuple[int, int] | None]:
    """-> (active controller id or None, (epoch, epoch znode version) if we won)."""
    active = await store.controller_id()
    if active is not None:
        return active, None
    try:
        won = await store.register_controller(broker_id)
    except ControllerMovedError:
        return await store.controller_id(), None
    log.info("broker %d became the controller (epoch %d)", broker_id, won[0])
    return broker_id, won
