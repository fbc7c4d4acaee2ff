"""The dynamic listener keys (Kafka 3.9's DynamicListenerConfig, ZooKeeper mode):
``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map``, per
broker only (keys.LISTENER_KEYS; refused on ``<default>``).

Check (``check``, before anything is stored; ReconfigureError, INVALID_CONFIG naming
key and value): the broker's entry with the update is folded into an effective
config (layers.effective_config) and must give

* listeners that parse, with unique names, each named in the protocol map;
* advertised listeners (``listeners`` when unset) that are a subset of the listeners;
* the inter-broker listener and the control-plane listener (when one is set) still
  there, with the same endpoint, advertised endpoint and protocol (they are what the
  other brokers and the controller connect to: Kafka refuses to remove them);
* the same protocol for every listener that stays (Kafka: "Security protocol cannot
  be updated for existing listener");
* for each added listener, a security that builds (broker/security/listeners.py:
  an SSL listener without a keystore, a SASL one without mechanisms or JAAS config
  is refused here, not found broken after the store).

Apply (``sync``, async; after an alter, on a /config/changes notification, and at
start-up before the listeners open): the wanted endpoints come from
``broker.config`` (already the effective config). Before the broker started
(``broker.servers`` empty) only ``broker.listeners`` / ``broker.advertised`` /
``broker.listener_security`` are set: the start-up loop opens them. On a running
broker every listener whose endpoint went (or changed) gets KafkaServer.stop (its
listening sockets and its connections closed), every new one a KafkaServer
(``DynamicConfigHost.open_listener``; ``listening on ...`` logged with the bound port), and when the advertised
endpoints differ the broker's own ephemeral ``/brokers/ids/<id>`` is rewritten
(ClusterStore.update_broker_registration, same JSON shape): the controller's data
watch on it (controller/broker_modifications.py) sends UpdateMetadata to every
live broker, whose metadata caches then list the new endpoint.

A listener that fails to start (port taken) is logged and left out; the others
still apply. Syncs run one at a time per broker: an alter's own and its notification's
come together. A removed listener closes in the background CLOSE_DELAY_S later, so
a request in flight on it -- the alter that removed it, answered after whichever of
the two syncs came first -- gets its answer out. A listener whose endpoint changed is
closed before its new endpoint opens (the same port may be taken again), in the
background only when the request that changed it came in on it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import weakref
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfig, ConfigError
from broker.dynamic_config.layers import DynamicLayers, default_entry, effective_config, static_of
from broker.listeners import Endpoint, parse_listeners
from broker.security.reconfigure import ReconfigureError

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost, ServedListener

log = logging.getLogger(__name__)

LISTENERS = "listeners"
ADVERTISED = "advertised.listeners"
PROTOCOL_MAP = "listener.security.protocol.map"
LISTENER_KEYS = frozenset({LISTENERS, ADVERTISED, PROTOCOL_MAP})
CLOSE_DELAY_S = 0.5     # how long a removed listener stays open (answers in flight go out)


def _bad(key: str, value: Any, why: str) -> ReconfigureError:
    return ReconfigureError(f"Invalid value {value} for configuration {key}: {why}",
                            invalid_config=True)


def wanted(config: BrokerConfig) -> tuple[list[Endpoint], list[Endpoint], dict[str, str]]:
    """(listeners, advertised listeners, protocol map) of ``config``; ConfigError."""
    from broker.security.listeners import protocol_map
    listeners = parse_listeners(LISTENERS, config.listeners)
    advertised = [Endpoint(e.name, e.host or socket.getfqdn(), e.port) for e in
                  parse_listeners(ADVERTISED, config.advertised_listeners or config.listeners)]
    return listeners, advertised, protocol_map(config)


def check(broker: DynamicConfigHost, updates: dict[str, str | None]) -> None:
    """Raise ReconfigureError when the broker's entry with ``updates`` makes a listener
    set this broker cannot switch to (module docstring). No-op without listener keys."""
    if not LISTENER_KEYS & set(updates):
        return
    from broker.security.listeners import listener_security
    entry = dict(broker.dynamic_configs)
    for key, value in updates.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    old = broker.config
    try:
        new = effective_config(DynamicLayers(static_of(broker), entry,
                                             default_entry(broker)),
                               old.listener_overrides)
    except (ConfigError, TypeError) as e:
        raise ReconfigureError(str(e), invalid_config=True) from None
    try:
        listeners, advertised, pmap = wanted(new)
    except ConfigError as e:
        raise ReconfigureError(str(e), invalid_config=True) from None
    names = [e.name for e in listeners]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise _bad(LISTENERS, new.listeners, f"Each listener must have a different name, "
                   f"listeners: {new.listeners} (repeated: {', '.join(dupes)})")
    unmapped = [n for n in names if n not in pmap]
    if unmapped:
        raise _bad(PROTOCOL_MAP, new.listener_security_protocol_map,
                   f"Listeners {', '.join(unmapped)} must be in the listener map "
                   f"(listeners: {new.listeners})")
    adv_names = [e.name for e in advertised]
    if not set(adv_names) <= set(names) or len(set(adv_names)) != len(adv_names):
        raise _bad(ADVERTISED, new.advertised_listeners,
                   f"Advertised listeners must be a subset of listeners '{new.listeners}' "
                   f"with different names")
    old_listeners, old_advertised, old_map = _current(broker)
    old_adv = _by_name(old_advertised)
    advertised = [Endpoint(a.name, a.host, old_adv[a.name].port)   # port 0: the bound one
                  if a.port == 0 and a.name in old_adv else a for a in advertised]
    fixed = {broker.inter_broker_listener, broker.control_plane_listener}
    for name in sorted(fixed):
        same = (_by_name(listeners).get(name) == _by_name(old_listeners).get(name)
                and _by_name(advertised).get(name) == _by_name(old_advertised).get(name)
                and pmap.get(name) == old_map.get(name))
        if not same:
            what = ("inter-broker" if name == broker.inter_broker_listener
                    else "control-plane")
            raise _bad(LISTENERS, new.listeners,
                       f"the {what} listener {name} cannot be removed or changed "
                       f"dynamically (it is {_describe(old_listeners, name)})")
    for ep in listeners:
        if ep.name in old_map and pmap[ep.name] != old_map[ep.name] and \
                ep.name in _by_name(old_listeners):
            raise _bad(PROTOCOL_MAP, new.listener_security_protocol_map,
                       f"Security protocol cannot be updated for existing listener {ep.name}")
        if ep.name not in broker.listener_security:
            try:
                listener_security(new, ep.name)
            except (ConfigError, ValueError, OSError) as err:
                raise _bad(LISTENERS, new.listeners,
                           f"listener {ep.name} cannot be started: {err}") from None


def _by_name(endpoints: list[Endpoint]) -> dict[str, Endpoint]:
    return {e.name: e for e in endpoints}


def _describe(endpoints: list[Endpoint], name: str) -> str:
    e = _by_name(endpoints).get(name)
    return f"{name}://{e.host}:{e.port}" if e else name


def _current(broker: DynamicConfigHost) -> tuple[list[Endpoint], list[Endpoint], dict[str, str]]:
    """What the broker runs now (its listeners as configured, advertised as registered)."""
    return (list(broker.listeners), list(broker.advertised),
            {name: sec.protocol for name, sec in broker.listener_security.items()})


def prepare(broker: DynamicConfigHost) -> None:
    """Before start-up opens the listeners (live.refresh on the stored entry): set
    ``broker.listeners`` / ``advertised`` / ``listener_security`` from the config;
    a listener whose security does not build is logged and left out."""
    from broker.security.listeners import listener_security
    try:
        listeners, advertised, _pmap = wanted(broker.config)
    except ConfigError as e:
        log.error("dynamic listener configs not applied: %s", e)
        return
    security = {}
    for ep in listeners:
        try:
            security[ep.name] = (broker.listener_security.get(ep.name)
                                 or listener_security(broker.config, ep.name))
        except (ConfigError, ValueError, OSError) as err:
            log.error("listener %s not started: %s", ep.name, err)
    broker.listeners = [e for e in listeners if e.name in security]
    broker.advertised = [a for a in advertised if a.name in security]
    broker.listener_security = security


# One sync at a time per broker: a sync reads the running listeners, awaits (a listener's
# stop or start) and then writes them, and the same change comes twice -- the alter's own
# sync on the broker that took it, and the /config/changes notification's -- so two
# interleaved ones both closed the same listener (list.remove of one already removed).
_syncs: weakref.WeakKeyDictionary[DynamicConfigHost, asyncio.Lock] = weakref.WeakKeyDictionary()


async def sync(broker: DynamicConfigHost) -> None:
    """Make the running listeners and the registration match ``broker.config`` (one at
    a time per broker: a second waits, then finds what is left to do)."""
    async with _syncs.setdefault(broker, asyncio.Lock()):
        await _sync(broker)


async def _sync(broker: DynamicConfigHost) -> None:
    try:
        listeners, advertised, _pmap = wanted(broker.config)
    except ConfigError as e:
        log.error("dynamic listener configs not applied: %s", e)
        return
    from broker.security.listeners import listener_security
    if not broker.servers:      # before start-up opened any
        prepare(broker)
        return
    want = _by_name(listeners)
    running = {s.endpoint.name: s for s in list(broker.servers)}
    fixed = {broker.inter_broker_listener, broker.control_plane_listener}
    for name, server in running.items():
        if want.get(name) != server.endpoint and name in fixed:
            log.error("listener %s not closed: the %s listener stays (an entry written "
                      "around the checks?)", name, "inter-broker/control-plane")
            want[name] = server.endpoint
        elif want.get(name) != server.endpoint:
            if name in want and not server.serves_current_task():
                # moved: closed first, so that its new endpoint can take the same port
                await server.stop()
            else:
                # removed, or moved by a request on it: closed in the background,
                # CLOSE_DELAY_S on, so that a request in flight on it -- the alter that
                # removed it, which this broker's own sync or the notification's may
                # handle first -- gets its answer out (and a connection's task never
                # awaits its own cancellation)
                broker.spawn(_stop_later(server))
            broker.servers.remove(server)
            broker.listener_security.pop(name, None)
            log.info("listener %s://%s:%d closed (dynamic config)", name,
                     server.endpoint.host or "0.0.0.0", server.endpoint.port)
    running = {s.endpoint.name: s for s in broker.servers}
    for name, endpoint in want.items():
        if name in running:
            continue
        try:
            security = broker.listener_security.get(name) or listener_security(
                broker.config, name)
            server = broker.open_listener(endpoint, security)
            await server.start()
        except (OSError, ConfigError, ValueError) as e:
            log.error("listener %s://%s:%d not started: %s", name, endpoint.host,
                      endpoint.port, e)
            continue
        broker.listener_security[name] = security
        broker.servers.append(server)
    bound = {s.endpoint.name: s.port for s in broker.servers}
    new_advertised = [Endpoint(a.name, a.host, bound[a.name] if a.port == 0 else a.port)
                      for a in advertised if a.name in bound]
    kept = {a.name for a in new_advertised}
    new_advertised += [a for a in broker.advertised if a.name in fixed and a.name not in kept]
    broker.listeners = [s.endpoint for s in broker.servers]
    if new_advertised != list(broker.advertised):
        broker.advertised = new_advertised
        await _reregister(broker)


async def _stop_later(server: ServedListener) -> None:
    """Close a removed listener once the answers in flight on it went out (CLOSE_DELAY_S)."""
    await asyncio.sleep(CLOSE_DELAY_S)
    await server.stop()


async def _reregister(broker: DynamicConfigHost) -> None:
    from controller import Endpoint as ZkEndpoint
    endpoints = [ZkEndpoint(e.name, e.host, e.port, broker.listener_security[e.name].protocol)
                 for e in broker.advertised]
    await broker.cluster.update_broker_registration(broker.broker_id, endpoints,
                                                    broker.config.broker_rack)
    log.info("broker %s registration updated: %s", broker.broker_id,
             ",".join(e.connection_string() for e in endpoints))
