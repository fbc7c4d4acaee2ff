"""client.security: ClientSecurity.from_config over Kafka's Java and librdkafka keys,
the properties reader, and the errors a bad setting gives.

Certificates are made per test session by the ``openssl`` CLI (``make_pki``, also used
by test_sasl_client.py): a CA, a broker certificate for 127.0.0.1/localhost, one for
another host, and a client certificate (plain, encrypted PKCS#8, PKCS#12).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from client.security import (PLAINTEXT, ClientSecurity, _openssl_cipher, load_client_properties,
                             parse_properties)

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"
KEY_PASSWORD = "key-secret"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="alice" password="alice-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="bob" password="bob-secret";')


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca: Path              # the CA certificate (PEM)
    server_cert: Path     # for IP:127.0.0.1 and DNS:localhost
    server_key: Path
    other_cert: Path      # for DNS:elsewhere.test only
    other_key: Path
    client_cert: Path     # CN=alice
    client_key: Path
    client_key_encrypted: Path   # PKCS#8, KEY_PASSWORD
    client_keystore: Path        # key + chain in one PEM file (a Java PEM keystore)
    client_p12: Path

    def server_context(self, *, other: bool = False, require_client_cert: bool = False
                       ) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.other_cert if other else self.server_cert,
                            self.other_key if other else self.server_key)
        if require_client_cert:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(cafile=str(self.ca))
        return ctx


def _openssl(cwd: Path, *args: str) -> None:
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(d: Path) -> Pki:
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(d, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=pybroker-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, san in (("server", "IP:127.0.0.1,DNS:localhost"), ("other", "DNS:elsewhere.test"),
                      ("client", None)):
        _openssl(d, "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={'alice' if name == 'client' else name}")
        ext = d / f"{name}.ext"
        ext.write_text(f"subjectAltName={san}\n" if san else "extendedKeyUsage=clientAuth\n")
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", ext.name)
    _openssl(d, "pkcs8", "-topk8", "-in", "client.key", "-out", "client-enc.key",
             "-passout", f"pass:{KEY_PASSWORD}", "-v2", "aes-256-cbc")
    _openssl(d, "pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key",
             "-out", "client.p12", "-passout", "pass:store-secret")
    keystore = d / "client-keystore.pem"
    keystore.write_text((d / "client.key").read_text() + (d / "client.pem").read_text()
                        + (d / "ca.pem").read_text())
    return Pki(d, d / "ca.pem", d / "server.pem", d / "server.key", d / "other.pem",
               d / "other.key", d / "client.pem", d / "client.key", d / "client-enc.key",
               keystore, d / "client.p12")


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def ca_names(ctx: ssl.SSLContext) -> list[str]:
    return [dict(x[0] for x in c["subject"])["commonName"] for c in ctx.get_ca_certs()]


def one_line(pem: str) -> str:
    """A PEM as a properties file's ``\\`` continuations leave it: breaks become spaces."""
    return " ".join(pem.split())


# -- protocol and defaults -----------------------------------------------------------------


def test_no_keys_is_plaintext() -> None:
    sec = ClientSecurity.from_config({"bootstrap.servers": "x:1", "group.id": "g"})
    assert sec == PLAINTEXT
    assert sec.protocol == "PLAINTEXT" and sec.ssl_context is None
    assert not sec.uses_tls and not sec.uses_sasl


def test_protocol_is_case_insensitive_and_ssl_keys_are_ignored_without_tls() -> None:
    assert ClientSecurity.from_config({"security.protocol": "ssl"}).protocol == "SSL"
    sec = ClientSecurity.from_config({"security.protocol": " plaintext ",
                                      "ssl.truststore.type": "JKS"})
    assert sec.protocol == "PLAINTEXT"


def test_bad_protocol_names_key_and_value() -> None:
    with pytest.raises(ValueError, match=r"security\.protocol='TLS'.*PLAINTEXT, SSL"):
        ClientSecurity.from_config({"security.protocol": "TLS"})


def test_ssl_without_trust_keys_uses_the_system_cas_and_checks_host_names() -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL"})
    assert sec.uses_tls and sec.check_hostname
    assert sec.ssl_context is not None
    assert sec.ssl_context.check_hostname and sec.ssl_context.verify_mode == ssl.CERT_REQUIRED


# -- whom to trust -------------------------------------------------------------------------


def test_java_pem_truststore(pki: Pki) -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.truststore.type": "PEM",
                                      "ssl.truststore.location": str(pki.ca)})
    assert sec.ssl_context is not None and ca_names(sec.ssl_context) == ["pybroker-test-ca"]


def test_truststore_without_type_is_read_when_it_is_pem(pki: Pki) -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.truststore.location": str(pki.ca)})
    assert sec.ssl_context is not None and ca_names(sec.ssl_context) == ["pybroker-test-ca"]


def test_inline_truststore_certificates_survive_joined_lines(pki: Pki) -> None:
    for key in ("ssl.truststore.certificates", "ssl.ca.pem"):
        sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                          key: one_line(pki.ca.read_text())})
        assert sec.ssl_context is not None and ca_names(sec.ssl_context) == ["pybroker-test-ca"]


def test_librdkafka_ca_location_file_directory_and_probe(pki: Pki) -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.ca.location": str(pki.ca)})
    assert sec.ssl_context is not None and ca_names(sec.ssl_context) == ["pybroker-test-ca"]
    for value in (str(pki.dir), "probe"):
        assert ClientSecurity.from_config({"security.protocol": "SSL",
                                           "ssl.ca.location": value}).uses_tls


@pytest.mark.parametrize("kind", ["JKS", "PKCS12", "jks"])
def test_jks_and_pkcs12_truststores_are_refused(pki: Pki, kind: str) -> None:
    with pytest.raises(ValueError, match=rf"ssl\.truststore\.type='{kind}'.*PEM"):
        ClientSecurity.from_config({"security.protocol": "SSL", "ssl.truststore.type": kind,
                                    "ssl.truststore.location": str(pki.client_p12)})


def test_a_non_pem_truststore_without_type_says_kafka_reads_it_as_jks(pki: Pki) -> None:
    with pytest.raises(ValueError, match=r"ssl\.truststore\.location=.*not a PEM file.*JKS.*"
                                         r"ssl\.truststore\.type=PEM"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.truststore.location": str(pki.client_p12)})


def test_missing_and_bad_trust_files(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ssl\.ca\.location=.*cannot read it"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.ca.location": str(tmp_path / "nope.pem")})
    junk = tmp_path / "junk.pem"
    junk.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    with pytest.raises(ValueError, match=r"ssl\.ca\.location=.*no usable CA"):
        ClientSecurity.from_config({"security.protocol": "SSL", "ssl.ca.location": str(junk)})
    with pytest.raises(ValueError, match=r"ssl\.truststore\.certificates.*no PEM block"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.truststore.certificates": "hello"})


# -- how: host names, verification, protocols, ciphers ---------------------------------


@pytest.mark.parametrize(("value", "check"), [("https", True), ("HTTPS", True), ("", False),
                                              ("none", False)])
def test_endpoint_identification(value: str, check: bool) -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.endpoint.identification.algorithm": value})
    assert sec.check_hostname is check
    assert sec.ssl_context is not None and sec.ssl_context.check_hostname is check
    assert sec.ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_bad_endpoint_identification() -> None:
    with pytest.raises(ValueError, match=r"ssl\.endpoint\.identification\.algorithm='ldap'"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.endpoint.identification.algorithm": "ldap"})


def test_certificate_verification_off() -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "enable.ssl.certificate.verification": "false"})
    assert not sec.check_hostname
    assert sec.ssl_context is not None and sec.ssl_context.verify_mode == ssl.CERT_NONE
    with pytest.raises(ValueError, match=r"enable\.ssl\.certificate\.verification='maybe'"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "enable.ssl.certificate.verification": "maybe"})


def test_enabled_protocols_bound_the_versions() -> None:
    ctx = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.enabled.protocols": "TLSv1.2"}).ssl_context
    assert ctx is not None
    assert ctx.minimum_version == ctx.maximum_version == ssl.TLSVersion.TLSv1_2
    ctx = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.enabled.protocols": "TLSv1.3, TLSv1.2"}).ssl_context
    assert ctx is not None
    assert (ctx.minimum_version, ctx.maximum_version) == (ssl.TLSVersion.TLSv1_2,
                                                          ssl.TLSVersion.TLSv1_3)
    with pytest.raises(ValueError, match=r"ssl\.enabled\.protocols='TLSv1\.2,SSLv3'.*'SSLv3'"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.enabled.protocols": "TLSv1.2,SSLv3"})


@pytest.mark.parametrize(("iana", "openssl"), [
    ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "ECDHE-RSA-AES256-SHA384"),
    ("TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "DHE-RSA-AES128-GCM-SHA256"),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
])
def test_iana_cipher_names_map_to_openssl(iana: str, openssl: str) -> None:
    assert _openssl_cipher(iana) == openssl


def test_cipher_suites_narrow_tls12() -> None:
    ctx = ClientSecurity.from_config({
        "security.protocol": "SSL",
        "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
                             "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}).ssl_context
    assert ctx is not None
    tls12 = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"}
    ctx = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.cipher.suites": "HIGH:!aNULL"}).ssl_context
    assert ctx is not None and ctx.get_ciphers()


def test_only_tls13_suites_make_tls13_the_minimum() -> None:
    ctx = ClientSecurity.from_config({"security.protocol": "SSL",
                                      "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}).ssl_context
    assert ctx is not None and ctx.minimum_version == ssl.TLSVersion.TLSv1_3


def test_unknown_cipher_suite() -> None:
    with pytest.raises(ValueError, match=r"ssl\.cipher\.suites=.*'TLS_FOO_WITH_BAR'"):
        ClientSecurity.from_config({"security.protocol": "SSL",
                                    "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,"
                                                         "TLS_FOO_WITH_BAR"})


# -- who we are (mutual TLS) ---------------------------------------------------------------


def _mtls(pki: Pki, **keys: str) -> ClientSecurity:
    props = {"security.protocol": "SSL", "ssl.ca.location": str(pki.ca)}
    props.update({k.replace("_", "."): v for k, v in keys.items()})
    return ClientSecurity.from_config(props)


def test_java_pem_keystore_file(pki: Pki) -> None:
    assert _mtls(pki, ssl_keystore_type="PEM",
                 ssl_keystore_location=str(pki.client_keystore)).uses_tls


def test_inline_java_keystore_and_librdkafka_pems(pki: Pki) -> None:
    chain, key = one_line(pki.client_cert.read_text()), one_line(pki.client_key.read_text())
    assert _mtls(pki, ssl_keystore_type="PEM", ssl_keystore_certificate_chain=chain,
                 ssl_keystore_key=key).uses_tls
    assert _mtls(pki, ssl_certificate_pem=chain, ssl_key_pem=key).uses_tls
    with pytest.raises(ValueError, match=r"ssl\.keystore\.certificate\.chain and "
                                         r"ssl\.keystore\.key go together: ssl\.keystore\.key"):
        _mtls(pki, ssl_keystore_certificate_chain=chain)


def test_librdkafka_certificate_and_key_locations(pki: Pki) -> None:
    assert _mtls(pki, ssl_certificate_location=str(pki.client_cert),
                 ssl_key_location=str(pki.client_key)).uses_tls
    with pytest.raises(ValueError, match=r"ssl\.key\.location needs ssl\.certificate\.location"):
        _mtls(pki, ssl_key_location=str(pki.client_key))


def test_encrypted_key_needs_the_right_key_password(pki: Pki) -> None:
    enc = str(pki.client_key_encrypted)
    assert _mtls(pki, ssl_certificate_location=str(pki.client_cert), ssl_key_location=enc,
                 ssl_key_password=KEY_PASSWORD).uses_tls
    inline = one_line(pki.client_key_encrypted.read_text())
    assert _mtls(pki, ssl_keystore_certificate_chain=pki.client_cert.read_text(),
                 ssl_keystore_key=inline, ssl_key_password=KEY_PASSWORD).uses_tls
    with pytest.raises(ValueError, match=r"encrypted: set ssl\.key\.password"):
        _mtls(pki, ssl_certificate_location=str(pki.client_cert), ssl_key_location=enc)
    with pytest.raises(ValueError, match=r"ssl\.certificate\.location: cannot load.*"
                                         r"ssl\.key\.password right") as e:
        _mtls(pki, ssl_certificate_location=str(pki.client_cert), ssl_key_location=enc,
              ssl_key_password="wrong-one")
    assert "wrong-one" not in str(e.value)


def test_pkcs12_keystores_are_refused(pki: Pki) -> None:
    with pytest.raises(ValueError, match=r"ssl\.keystore\.type='PKCS12'.*PEM"):
        _mtls(pki, ssl_keystore_type="PKCS12", ssl_keystore_location=str(pki.client_p12))
    # librdkafka's ssl.keystore.location is a PKCS#12 file, Java's default type JKS
    with pytest.raises(ValueError, match=r"ssl\.keystore\.location=.*not a PEM file.*PEM"):
        _mtls(pki, ssl_keystore_location=str(pki.client_p12),
              ssl_keystore_password="store-secret")


# -- SASL ----------------------------------------------------------------------------------


def test_java_jaas_plain_and_scram() -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT",
                                      "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS})
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret")
    assert sec.ssl_context is None
    sec = ClientSecurity.from_config({"security.protocol": "SASL_SSL",
                                      "sasl.mechanism": "SCRAM-SHA-512",
                                      "sasl.jaas.config": SCRAM_JAAS})
    assert (sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SCRAM-SHA-512", "bob", "bob-secret")
    assert sec.uses_tls and sec.uses_sasl and sec.ssl_context is not None


def test_librdkafka_sasl_keys() -> None:
    sec = ClientSecurity.from_config({"security.protocol": "sasl_ssl",
                                      "sasl.mechanisms": "SCRAM-SHA-256",
                                      "sasl.username": "carol", "sasl.password": "pw"})
    assert (sec.protocol, sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SASL_SSL", "SCRAM-SHA-256", "carol", "pw")


def test_sasl_needs_a_supported_mechanism() -> None:
    base = {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u", "sasl.password": "p"}
    with pytest.raises(ValueError, match=r"needs sasl\.mechanism.*GSSAPI"):
        ClientSecurity.from_config(base)
    for mech in ("GSSAPI", "OAUTHBEARER"):
        with pytest.raises(ValueError, match=rf"sasl\.mechanism='{mech}' is not supported"):
            ClientSecurity.from_config({**base, "sasl.mechanism": mech})


def test_sasl_needs_username_and_password() -> None:
    with pytest.raises(ValueError, match=r"needs a username and a password.*no password"):
        ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT",
                                    "sasl.mechanism": "PLAIN", "sasl.username": "u"})
    with pytest.raises(ValueError, match=r"sasl\.jaas\.config gave no username"):
        ClientSecurity.from_config({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                "required password=\"p\";"})


def test_bad_jaas_names_the_key_and_keeps_the_password_out() -> None:
    with pytest.raises(ValueError, match=r"^sasl\.jaas\.config: JAAS config") as e:
        ClientSecurity.from_config({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS.rstrip(";")})
    assert "alice-secret" not in str(e.value)
    with pytest.raises(ValueError, match=r"login module 'com\.sun\.security\.auth\.module\."
                                         r"Krb5LoginModule' is not supported"):
        ClientSecurity.from_config({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"})


def test_repr_hides_the_password() -> None:
    sec = ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT",
                                      "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS})
    assert "alice-secret" not in repr(sec) and "alice" in repr(sec)


# -- the dataclass on its own ----------------------------------------------------------------


def test_direct_construction_checks_itself() -> None:
    sec = ClientSecurity(protocol="SSL")
    assert sec.ssl_context is not None and sec.ssl_context.check_hostname
    with pytest.raises(ValueError, match="security protocol 'TLS'"):
        ClientSecurity(protocol="TLS")
    with pytest.raises(ValueError, match="needs a SASL username and password"):
        ClientSecurity(protocol="SASL_SSL", sasl_username="u")
    with pytest.raises(ValueError, match="'GSSAPI' is not supported"):
        ClientSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI", sasl_username="u",
                       sasl_password="p")
    ctx = ssl.create_default_context()
    assert ClientSecurity("SSL", ctx, check_hostname=False).ssl_context is ctx
    assert not ctx.check_hostname
    unverified = ssl._create_unverified_context()
    with pytest.raises(ValueError, match="CERT_NONE"):
        ClientSecurity("SSL", unverified, check_hostname=True)


# -- properties files ------------------------------------------------------------------------


def test_parse_properties_follows_java() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "security.protocol=SASL_SSL\n"
        "   sasl.mechanism : SCRAM-SHA-512\n"
        "client.id  tool\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"bob\" \\\n"
        "    password=\"bob-secret\";\n"
        "key\\=with\\:seps = v\\u0041\\tx\n"
        "empty=\n"
        "bare\n"
        "dup=1\r\ndup=2\r\n"
        "ends.with.backslash=a\\\\\n"
    )
    props = parse_properties(text)
    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "client.id": "tool",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="bob" password="bob-secret";',
        "key=with:seps": "vA\tx",
        "empty": "",
        "bare": "",
        "dup": "2",
        "ends.with.backslash": "a\\",
    }
    sec = ClientSecurity.from_config(props)
    assert (sec.sasl_mechanism, sec.sasl_username, sec.sasl_password) == (
        "SCRAM-SHA-512", "bob", "bob-secret")


def test_load_client_properties(tmp_path: Path, pki: Pki) -> None:
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SSL\n"
                    "ssl.truststore.type=PEM\n"
                    f"ssl.truststore.location={pki.ca}\n", encoding="utf-8")
    props = load_client_properties(path)
    assert props["ssl.truststore.location"] == str(pki.ca)
    assert ClientSecurity.from_config(props).uses_tls
    with pytest.raises(ValueError, match=r"cannot read client properties .*missing"):
        load_client_properties(tmp_path / "missing.properties")
