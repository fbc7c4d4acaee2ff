"""Listener configuration (broker.security.listeners): the protocol map, the
inter-broker and control-plane listeners, and how the broker's own connections
authenticate — every bad value a ConfigError naming the key."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.listeners import Endpoint
from broker.security.listeners import (client_security, control_plane_listener,
                                       inter_broker_listener, listener_security, protocol_map)

EPS = [Endpoint("INTERNAL", "h", 1), Endpoint("EXTERNAL", "h", 2), Endpoint("PLAINTEXT", "h", 3)]
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="broker" password="broker-secret";')


def with_map(extra: dict[str, str] | None = None) -> BrokerConfig:
    return BrokerConfig.from_properties({
        "listener.security.protocol.map":
            "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SSL,PLAINTEXT:PLAINTEXT", **(extra or {})})


def test_default_map_names_the_four_protocols() -> None:
    assert protocol_map(BrokerConfig()) == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL",
                                            "SASL_PLAINTEXT": "SASL_PLAINTEXT",
                                            "SASL_SSL": "SASL_SSL"}


def test_bad_map_entries_and_unmapped_listeners_stop_start_up() -> None:
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        protocol_map(BrokerConfig.from_properties(
            {"listener.security.protocol.map": "A:TLS"}))
    with pytest.raises(ConfigError, match="No security protocol defined for listener EXTERNAL"):
        listener_security(BrokerConfig(), "EXTERNAL")


def test_inter_broker_listener_by_name_or_by_protocol() -> None:
    assert inter_broker_listener(with_map({"inter.broker.listener.name": "internal"}),
                                 EPS) == "INTERNAL"
    assert inter_broker_listener(with_map({"security.inter.broker.protocol": "SSL"}),
                                 EPS) == "EXTERNAL"
    assert inter_broker_listener(with_map(), EPS) == "PLAINTEXT"
    with pytest.raises(ConfigError, match="Only one of"):
        inter_broker_listener(with_map({"inter.broker.listener.name": "INTERNAL",
                                        "security.inter.broker.protocol": "SSL"}), EPS)
    with pytest.raises(ConfigError, match="inter.broker.listener.name"):
        inter_broker_listener(with_map({"inter.broker.listener.name": "NOPE"}), EPS)


def test_control_plane_listener_defaults_to_the_inter_broker_one() -> None:
    assert control_plane_listener(with_map(), EPS, "INTERNAL") == "INTERNAL"
    assert control_plane_listener(with_map({"control.plane.listener.name": "external"}),
                                  EPS, "INTERNAL") == "EXTERNAL"


def test_brokers_authenticate_with_the_listeners_jaas_credentials() -> None:
    c = with_map({"listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
                  "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
                  "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"})
    sec = client_security(c, "INTERNAL")
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "broker", "broker-secret")
    assert client_security(c, "PLAINTEXT").protocol == "PLAINTEXT"


def test_inter_broker_mechanism_must_be_enabled_and_have_credentials() -> None:
    base = {"listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol"):
        client_security(with_map({**base, "sasl.mechanism.inter.broker.protocol": "PLAIN"}),
                        "INTERNAL")
    with pytest.raises(ConfigError, match="needs username and password"):
        client_security(with_map({**base, "sasl.mechanism.inter.broker.protocol":
                                  "SCRAM-SHA-512"}), "INTERNAL")


def test_a_tls_listener_needs_a_keystore_and_refuses_jks() -> None:
    with pytest.raises(ConfigError, match="ssl.keystore.location"):
        listener_security(with_map(), "EXTERNAL")
    with pytest.raises(ConfigError, match="PEM and PKCS12 are supported"):
        listener_security(with_map({"ssl.keystore.location": "/x.jks"}), "EXTERNAL")
