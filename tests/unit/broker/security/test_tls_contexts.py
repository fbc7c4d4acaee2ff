"""broker.security.tls: SSLContexts from Kafka's ssl.* keys — PEM files, inline PEM,
PKCS12 (through the openssl command), client auth, protocols and ciphers — each
checked by a real handshake on a socket pair where it matters."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.security.tls import client_context, server_context
from tests.integration.security.certs import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), names=("broker", "alice"))


def cfg(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({k.replace("__", "."): v for k, v in props.items()})


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> dict | None:  # type: ignore[type-arg]
    """Run both ends over a socket pair; -> the server's view of the client cert."""
    a, b = socket.socketpair()
    seen: list[dict | None] = []  # type: ignore[type-arg]
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            with server.wrap_socket(a, server_side=True) as s:
                seen.append(s.getpeercert())
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)
    t = threading.Thread(target=serve)
    t.start()
    try:
        with client.wrap_socket(b, server_hostname="127.0.0.1"):
            pass
    finally:
        t.join(10)
        a.close()
        b.close()
    if errors:
        raise errors[0]
    return seen[0]


def trusting(pki: Pki, cert: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=pki.ca)
    if cert:
        ctx.load_cert_chain(pki.keystore(cert))
    return ctx


def test_pem_keystore_file_and_inline_pem(pki: Pki) -> None:
    by_file = server_context(cfg(ssl__keystore__type="PEM",
                                 ssl__keystore__location=pki.keystore("broker")), "SSL")
    handshake(by_file, trusting(pki))
    inline = server_context(cfg(**{
        "ssl.keystore.type": "PEM", "ssl.keystore.key": Path(pki.key("broker")).read_text(),
        "ssl.keystore.certificate.chain": Path(pki.cert("broker")).read_text()}), "SSL")
    handshake(inline, trusting(pki))


def test_pkcs12_keystore_and_truststore_through_openssl(pki: Pki) -> None:
    server = server_context(cfg(**{
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.pkcs12("broker"),
        "ssl.keystore.password": "p12-secret", "ssl.client.auth": "required",
        "ssl.truststore.type": "PKCS12", "ssl.truststore.location": pki.pkcs12("broker"),
        "ssl.truststore.password": "p12-secret"}), "SSL")
    assert server.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError, match="PKCS12"):
        server_context(cfg(**{"ssl.keystore.type": "PKCS12",
                              "ssl.keystore.location": pki.pkcs12("broker"),
                              "ssl.keystore.password": "wrong"}), "SSL")


def test_required_client_auth_gives_the_client_certificate(pki: Pki) -> None:
    server = server_context(cfg(**{
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore("broker"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca,
        "listener.name.internal.ssl.client.auth": "required"}), "INTERNAL")
    cert = handshake(server, trusting(pki, "alice"))
    assert cert is not None and dict(r[0] for r in cert["subject"])["commonName"] == "alice"
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        handshake(server, trusting(pki))             # no client certificate


def test_brokers_client_context_checks_the_host_name_unless_told_not_to(pki: Pki) -> None:
    base = {"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca}
    ctx, check = client_context(cfg(**base), "SSL")
    assert check and ctx.check_hostname
    ctx, check = client_context(cfg(**base, ssl__endpoint__identification__algorithm=""), "SSL")
    assert not check and not ctx.check_hostname


@pytest.mark.parametrize("key,value,match", [
    ("ssl.enabled.protocols", "TLSv1.1", "ssl.enabled.protocols"),
    ("ssl.cipher.suites", "NOT-A-CIPHER", "ssl.cipher.suites"),
    ("ssl.keystore.type", "JKS", "convert a JKS store"),
])
def test_bad_values_name_the_key(pki: Pki, key: str, value: str, match: str) -> None:
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore("broker"),
             key: value}
    with pytest.raises(ConfigError, match=match):
        server_context(cfg(**props), "SSL")
