"""Certificate rotation without a restart: a listener's keystore and truststore as
per-broker dynamic configs, as Kafka's DynamicListenerConfig / SslFactory.reconfigure.

    pybroker configs --bootstrap-server H:P --entity-type brokers --entity-name 0 --alter \
        --add-config listener.name.external.ssl.keystore.location=/etc/pybroker/new.pem

Rules (Kafka 3.9's, for the keys we serve):

* Only ``listener.name.<listener>.<key>`` with ``<key>`` one of ``RECONFIGURABLE``
  on a TLS listener of this broker, set on the broker's own id (never the
  cluster-wide default ``""``). Other keys stay read-only (INVALID_REQUEST).
* Setting a key to the value it already has reloads the files: replace the PEM
  file in place, then alter the config with the same path.
* The new context is built (and so checked) before anything changes; a keystore or
  truststore OpenSSL refuses -> INVALID_CONFIG naming the key. ValidateOnly stops there.
* Applied: new TLS handshakes on that listener use the new context; connections
  already open keep theirs (as in Kafka).
* Stored in ZooKeeper as Kafka stores dynamic broker configs:
  ``/config/brokers/<id>`` = ``{"version":1,"config":{key: value}}`` plus a
  ``/config/changes`` notification ``{"version":2,"entity_path":"brokers/<id>"}``;
  read back at start-up (``load``) over server.properties.

Passwords (``ssl.keystore.password``, ``ssl.key.password``, inline PEM) are not
accepted dynamically: Kafka stores them encrypted with ``password.encoder.secret``,
which we do not have yet (issue 18's dynamic configs). Kafka also checks that the new
certificate keeps the old subject and SANs; we do not (left, noted in the issue).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import TYPE_CHECKING

from broker.config import BrokerConfig, ConfigError
from broker.security.tls import server_context

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost
    from controller import ClusterStore

log = logging.getLogger(__name__)

RECONFIGURABLE = frozenset({"ssl.keystore.type", "ssl.keystore.location",
                            "ssl.truststore.type", "ssl.truststore.location"})
PREFIX = "listener.name."


class ReconfigureError(ValueError):
    """A refused update; ``invalid_config`` says INVALID_CONFIG, else INVALID_REQUEST."""

    def __init__(self, message: str, invalid_config: bool = False) -> None:
        super().__init__(message)
        self.invalid_config = invalid_config


def split(key: str) -> tuple[str, str] | None:
    """``listener.name.<l>.<key>`` -> (LISTENER, key), or None for other keys."""
    if not key.startswith(PREFIX):
        return None
    listener, dot, sub = key[len(PREFIX):].partition(".")
    return (listener.upper(), sub) if dot and sub else None


def check_keys(broker: DynamicConfigHost, keys: list[str]) -> dict[str, tuple[str, str]]:
    """ReconfigureError unless every key is a reconfigurable TLS key of one of this
    broker's TLS listeners. -> key -> (LISTENER, key within the listener)."""
    bad = []
    parsed: dict[str, tuple[str, str]] = {}
    for key in keys:
        parts = split(key)
        sec = broker.listener_security.get(parts[0]) if parts else None
        if parts is None or parts[1] not in RECONFIGURABLE or sec is None or not sec.uses_tls:
            bad.append(key)
        else:
            parsed[key] = parts
    if bad:
        raise ReconfigureError("Cannot update these configs dynamically: "
                               + ", ".join(sorted(bad)))
    return parsed


def apply(broker: DynamicConfigHost, updates: dict[str, str | None],
          validate_only: bool) -> BrokerConfig:
    """Build each touched listener's new context from the config with ``updates``
    (None deletes a dynamic key); unless ``validate_only``, swap them in and make
    the new config the broker's. -> the new config."""
    parsed = check_keys(broker, list(updates))
    overrides = dict(broker.config.listener_overrides)
    for key, value in updates.items():
        listener, sub = parsed[key]
        norm = f"{PREFIX}{listener.lower()}.{sub}"
        if value is None:
            overrides.pop(norm, None)
            static = broker.static_listener_overrides.get(norm)
            if static is not None:
                overrides[norm] = static
        else:
            overrides[norm] = value
    config = dataclasses.replace(broker.config, listener_overrides=overrides)
    contexts = {}
    for listener in {parsed[k][0] for k in updates}:
        try:
            contexts[listener] = server_context(config, listener)
        except ConfigError as e:
            raise ReconfigureError(f"Validation of dynamic config update of SSLFactory "
                                   f"failed: {e}", invalid_config=True) from None
    if validate_only:
        return config
    broker.config = config
    for listener, ctx in contexts.items():
        sec = dataclasses.replace(broker.listener_security[listener], tls=ctx)
        broker.listener_security[listener] = sec
        for server in broker.servers:
            if server.endpoint.name == listener:
                server.security = sec
        log.info("listener %s: TLS keystore/truststore reloaded (%s)", listener,
                 ", ".join(sorted(k for k in updates if parsed[k][0] == listener)))
    return config


def dynamic_keys(broker: DynamicConfigHost) -> dict[str, str]:
    """The dynamic keys in force on this broker (from ``/config/brokers/<id>``)."""
    return dict(broker.dynamic_configs)


async def store(broker: DynamicConfigHost, updates: dict[str, str | None],
                entity: str | None = None) -> dict[str, str]:
    """Write the broker's dynamic configs with ``updates`` to ZooKeeper (and a change
    notification); ``broker.dynamic_configs`` follows. ``entity`` "<default>" writes
    the cluster-wide default entry instead (``broker.dynamic_configs`` untouched).
    -> the entry as written."""
    entity = entity or str(broker.broker_id)
    path = f"/config/brokers/{entity}"
    zk = broker.cluster
    for _attempt in range(10):
        got = await zk.get_data(path)
        current = _decode(got[0]) if got else {}
        for key, value in updates.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        data = json.dumps({"version": 1, "config": current}).encode()
        done = (await zk.set_data(path, data, got[1]) is not None) if got \
            else await zk.create(path, data)
        if done:
            await zk.create_sequential("/config/changes/config_change_", json.dumps(
                {"version": 2, "entity_path": f"brokers/{entity}"}).encode())
            if entity == str(broker.broker_id):
                broker.dynamic_configs = current
            return current
    raise ReconfigureError(f"{path} kept changing under us; try again")


async def load(cluster: ClusterStore, broker_id: int | str, extra_keys: frozenset[str] = frozenset()
               ) -> dict[str, str]:
    """``/config/brokers/<id>``'s reconfigurable listener keys and ``extra_keys``
    (the other dynamic keys served, broker/dynamic_broker_configs.py); others are
    ignored with a warning (they are issue 18's)."""
    got = await cluster.get_data(f"/config/brokers/{broker_id}")
    if not got:
        return {}
    out = {}
    for key, value in _decode(got[0]).items():
        parts = split(key)
        if key in extra_keys:
            out[key] = value
        elif parts is not None and parts[1] in RECONFIGURABLE:
            out[f"{PREFIX}{parts[0].lower()}.{parts[1]}"] = value
        else:
            log.warning("dynamic broker config %s=%r in ZooKeeper not applied (not "
                        "reconfigurable here)", key, value)
    return out


def _decode(data: bytes | None) -> dict[str, str]:
    try:
        obj = json.loads(data or b"{}")
    except ValueError:
        return {}
    config = obj.get("config") if isinstance(obj, dict) else None
    return {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) else {}
