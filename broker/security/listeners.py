"""Named listeners and their security protocols (Kafka's listener configuration).

* ``listeners`` / ``advertised.listeners``: ``NAME://host:port`` entries; each
  NAME maps to a security protocol through ``listener.security.protocol.map``
  (``NAME:PROTOCOL,...``; Kafka's default maps the four protocol names to
  themselves). A listener the map does not name stops start-up.
* ``inter.broker.listener.name`` — the listener brokers use among themselves
  (follower fetches, AlterPartition, transaction markers); when unset, the first
  listener whose protocol is ``security.inter.broker.protocol`` (default
  PLAINTEXT). Setting both is an error, as in Kafka.
* ``control.plane.listener.name`` — the listener the controller's requests go to
  (LeaderAndIsr, UpdateMetadata, StopReplica); unset: the inter-broker listener.
* The broker's own connections authenticate as that listener says: its
  truststore (and keystore, for mutual TLS) and, for SASL,
  ``sasl.mechanism.inter.broker.protocol`` with the ``username`` / ``password``
  of the listener's JAAS config for that mechanism (as Kafka's broker login).

``ListenerSecurity`` is what one accepting listener needs at run time: its
protocol, TLS context, SASL settings and principal mapper, built once at start.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from broker.config import ConfigError
from broker.listeners import Endpoint
from broker.security.principal import PrincipalMapper
from broker.security.sasl_server import SaslSettings, sasl_settings
from broker.security.tls import client_context, server_context
from client.security import ClientSecurity

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def protocol_map(config: Any) -> dict[str, str]:
    """``listener.security.protocol.map`` as {LISTENER: PROTOCOL} (names upper-cased)."""
    raw = config.listener_security_protocol_map or ""
    out: dict[str, str] = {}
    for item in (i.strip() for i in raw.split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        proto = proto.strip().upper()
        if not sep or not name.strip() or proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid value {raw!r} for configuration "
                              f"listener.security.protocol.map: {item!r} is not "
                              f"LISTENER:{'|'.join(SECURITY_PROTOCOLS)}")
        out[name.strip().upper()] = proto
    return out


def protocol_of(config: Any, listener: str) -> str:
    try:
        return protocol_map(config)[listener.upper()]
    except KeyError:
        raise ConfigError(f"No security protocol defined for listener {listener} "
                          f"(listener.security.protocol.map="
                          f"{config.listener_security_protocol_map!r})") from None


def inter_broker_listener(config: Any, endpoints: list[Endpoint]) -> str:
    """The name of the listener brokers talk to each other on."""
    if config.inter_broker_listener_name:
        if config.security_inter_broker_protocol != "PLAINTEXT":
            raise ConfigError("Only one of inter.broker.listener.name and "
                              "security.inter.broker.protocol should be set.")
        name = config.inter_broker_listener_name.upper()
        if name not in {e.name for e in endpoints}:
            raise ConfigError(f"Invalid value {config.inter_broker_listener_name!r} for "
                              "configuration inter.broker.listener.name: not a listener "
                              "in advertised.listeners")
        return name
    for e in endpoints:
        if protocol_of(config, e.name) == config.security_inter_broker_protocol:
            return e.name
    raise ConfigError(f"No listener has security.inter.broker.protocol="
                      f"{config.security_inter_broker_protocol} "
                      f"(listeners: {', '.join(e.name for e in endpoints)})")


def control_plane_listener(config: Any, endpoints: list[Endpoint], inter_broker: str) -> str:
    name = config.control_plane_listener_name
    if not name:
        return inter_broker
    if name.upper() not in {e.name for e in endpoints}:
        raise ConfigError(f"Invalid value {name!r} for configuration "
                          "control.plane.listener.name: not a listener")
    return name.upper()


@dataclass(frozen=True)
class ListenerSecurity:
    """What one listener authenticates with; see the module docstring."""

    name: str
    protocol: str
    tls: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None
    mapper: PrincipalMapper | None = None

    @property
    def uses_tls(self) -> bool:
        return self.tls is not None

    @property
    def uses_sasl(self) -> bool:
        return self.sasl is not None


PLAINTEXT_LISTENER = ListenerSecurity("PLAINTEXT", "PLAINTEXT")


def listener_security(config: Any, listener: str) -> ListenerSecurity:
    """Build (and so check) one listener's security; ConfigError names the key."""
    proto = protocol_of(config, listener)
    tls = server_context(config, listener) if proto in ("SSL", "SASL_SSL") else None
    sasl = sasl_settings(config, listener) if proto.startswith("SASL") else None
    mapper = None
    if proto == "SSL":
        try:
            mapper = PrincipalMapper(config.for_listener(listener, "ssl.principal.mapping.rules"))
        except ValueError as e:
            raise ConfigError(str(e)) from None
    return ListenerSecurity(listener, proto, tls, sasl, mapper)


def client_security(config: Any, listener: str) -> ClientSecurity:
    """How this broker connects to other brokers' ``listener``."""
    proto = protocol_of(config, listener)
    ctx, check = client_context(config, listener) if proto in ("SSL", "SASL_SSL") \
        else (None, False)
    if not proto.startswith("SASL"):
        return ClientSecurity(protocol=proto, ssl_context=ctx, check_hostname=check)
    mechanism = config.sasl_mechanism_inter_broker_protocol.upper()
    settings = sasl_settings(config, listener)
    if mechanism not in settings.mechanisms:
        raise ConfigError(f"Invalid value {mechanism!r} for configuration "
                          f"sasl.mechanism.inter.broker.protocol: not enabled on listener "
                          f"{listener} ({', '.join(settings.mechanisms)})")
    entry = settings.jaas.get(mechanism)
    user = entry.options.get("username") if entry else None
    password = entry.options.get("password") if entry else None
    if not user or password is None:
        raise ConfigError(f"listener.name.{listener.lower()}.{mechanism.lower()}."
                          "sasl.jaas.config needs username and password: the broker "
                          "authenticates with them on the inter-broker listener")
    return ClientSecurity(protocol=proto, ssl_context=ctx, check_hostname=check,
                          sasl_mechanism=mechanism, sasl_username=user,
                          sasl_password=password)
