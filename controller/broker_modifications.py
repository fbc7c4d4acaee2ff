"""What a broker's dynamic configs change in the controller (issue 18): broker
modifications (Kafka's BrokerModificationsHandler / onBrokerUpdate: a live broker
rewrote its own ``/brokers/ids/<id>``, dynamic listeners,
broker/dynamic_config/listeners.py, without leaving the cluster), and unclean
leader election turned on at run time (``on_unclean_enabled``).

* ``watch``: while active, the controller keeps one data watch per broker id it
  has seen live (set on failover and on BrokerChange); a fire only puts the event
  ``BrokerModification(broker_id)`` on the queue (the watch callback never touches
  the context).
* ``on_modification`` (the event's handler, inside Controller.process): re-read the
  live registrations; a broker still in the context with the same epoch (czxid: the
  same registration, so not a bounce, which BrokerChange handles) but other
  endpoints or rack gets its BrokerInfo replaced in ``ctx.live``, the channel's
  connection to it re-made (the controller may talk to it on the new endpoint), and
  every live broker an UpdateMetadata with the new broker list (no partitions, as
  Kafka's sendUpdateMetadataRequest(liveBrokers, Set.empty)), so their metadata
  caches, and thus their Metadata answers on every listener, list the new endpoints.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from controller import events as ev
from controller import zkdata as zd

if TYPE_CHECKING:
    from controller.controller_ops import ControllerOps

log = logging.getLogger(__name__)


def watch(controller: ControllerOps, broker_ids: Any) -> None:
    """Data watches on /brokers/ids/<id> for ids not watched yet."""
    watches = controller.broker_watches
    for broker_id in broker_ids:
        if broker_id in watches:
            continue
        watches[broker_id] = controller.store.watch_data(
            zd.broker_path(broker_id), partial(_changed, controller, broker_id))


def _changed(controller: ControllerOps, broker_id: int, data: bytes | None) -> None:
    """The registration's data changed (None: it went; BrokerChange handles that)."""
    if data is not None:
        controller.events.put(ev.BrokerModification(broker_id))


def cancel_all(controller: ControllerOps) -> None:
    for cancel in controller.broker_watches.values():
        cancel()
    controller.broker_watches.clear()


async def on_modification(controller: ControllerOps, broker_id: int) -> None:
    ctx = controller.ctx
    known = ctx.live.get(broker_id)
    if known is None:
        return
    current = {b.id: b for b in await controller.store.live_brokers()}
    now = current.get(broker_id)
    if now is None or now.epoch != known.epoch:
        return          # gone or bounced: BrokerChange's
    if now.endpoints == known.endpoints and now.rack == known.rack:
        return
    log.info("controller %d: broker %d endpoints changed: %s -> %s", controller.broker_id,
             broker_id, ",".join(e.connection_string() for e in known.endpoints),
             ",".join(e.connection_string() for e in now.endpoints))
    ctx.live[broker_id] = now
    controller.channel.add_broker(now)
    batch = controller.new_batch()
    batch.add_update_metadata(ctx.live, [])
    batch.send(controller.channel)


async def on_unclean_enabled(controller: ControllerOps) -> None:
    """UncleanLeaderElectionEnable (Kafka's: triggerOnlinePartitionStateChange): the
    partitions without a leader get an offline election now, which may now pick an
    out-of-sync replica (a topic's own unclean.leader.election.enable=false still
    wins: Controller.unclean_topics)."""
    ctx = controller.ctx
    offline = [tp for tp in ctx.all_partitions()
               if tp in ctx.states and ctx.states[tp].leader == zd.NO_LEADER
               and tp[0] not in ctx.topics_to_delete]
    if not offline:
        return
    log.info("controller %d: unclean leader election enabled; electing %d offline "
             "partitions", controller.broker_id, len(offline))
    batch = controller.new_batch()
    await controller.bring_partitions_online(offline, batch)
    batch.send(controller.channel)
