"""Certificate rotation as dynamic listener configs (broker.security.reconfigure) and
how DescribeConfigs shows listener keys and secrets (broker.handlers.configs)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.handlers.configs import broker_rows
from broker.security import reconfigure
from broker.security.listeners import listener_security
from broker.topic_config import ConfigSource
from tests.integration.security.certs import Pki, make_pki

KEY = "listener.name.external.ssl.keystore.location"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), names=("broker", "rotated"))


def broker(pki: Pki) -> Any:
    config = BrokerConfig.from_properties({
        "listener.security.protocol.map": "EXTERNAL:SSL,PLAINTEXT:PLAINTEXT",
        "listener.name.external.ssl.keystore.type": "PEM", KEY: pki.keystore("broker"),
        "listener.name.plaintext.plain.sasl.jaas.config": "x required user_a=\"secret\";",
        "ssl.key.password": "hush"})
    security = {n: listener_security(config, n) for n in ("EXTERNAL", "PLAINTEXT")}
    server = SimpleNamespace(endpoint=SimpleNamespace(name="EXTERNAL"),
                             security=security["EXTERNAL"])
    return SimpleNamespace(config=config, listener_security=security, servers=[server],
                           static_listener_overrides=dict(config.listener_overrides),
                           dynamic_configs={})


def test_only_a_tls_listeners_stores_are_reconfigurable(pki: Pki) -> None:
    b = broker(pki)
    for key in ("listener.name.external.ssl.client.auth", "ssl.keystore.location",
                "listener.name.plaintext.ssl.keystore.location", "num.partitions"):
        with pytest.raises(reconfigure.ReconfigureError, match="Cannot update"):
            reconfigure.apply(b, {key: "x"}, validate_only=True)


def test_an_unloadable_keystore_is_invalid_config_and_changes_nothing(pki: Pki) -> None:
    b = broker(pki)
    before = b.servers[0].security
    with pytest.raises(reconfigure.ReconfigureError) as e:
        reconfigure.apply(b, {KEY: str(pki.dir / "missing.pem")}, validate_only=False)
    assert e.value.invalid_config and "SSLFactory" in str(e.value)
    assert b.servers[0].security is before and b.config.listener_overrides[KEY] == \
        pki.keystore("broker")


def test_validate_only_builds_but_does_not_swap(pki: Pki) -> None:
    b = broker(pki)
    before = b.servers[0].security
    reconfigure.apply(b, {KEY: pki.keystore("rotated")}, validate_only=True)
    assert b.servers[0].security is before


def test_apply_swaps_the_listeners_context_and_delete_restores_the_static_one(pki: Pki
                                                                             ) -> None:
    b = broker(pki)
    before = b.servers[0].security
    reconfigure.apply(b, {"listener.name.EXTERNAL.ssl.keystore.location":   # any case
                          pki.keystore("rotated")}, validate_only=False)
    assert b.servers[0].security is not before
    assert b.servers[0].security.tls is b.listener_security["EXTERNAL"].tls
    assert b.config.listener_overrides[KEY] == pki.keystore("rotated")
    reconfigure.apply(b, {KEY: None}, validate_only=False)
    assert b.config.listener_overrides[KEY] == pki.keystore("broker")


def test_describe_hides_secrets_and_names_dynamic_keys(pki: Pki) -> None:
    b = broker(pki)
    rows = {r.name: r for r in broker_rows(b.config, {KEY: pki.keystore("broker")})}
    assert "listener.overrides" not in rows
    jaas = rows["listener.name.plaintext.plain.sasl.jaas.config"]
    assert jaas.sensitive and jaas.value is None and all(s.value is None for s in jaas.synonyms)
    assert rows["ssl.key.password"].sensitive and rows["ssl.key.password"].value is None
    assert rows[KEY].source == ConfigSource.DYNAMIC_BROKER_CONFIG and not rows[KEY].read_only
    assert rows["listener.name.external.ssl.keystore.type"].source == \
        ConfigSource.STATIC_BROKER_CONFIG
