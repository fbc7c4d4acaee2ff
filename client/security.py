"""How our client secures a connection (TLS, SASL), read from Kafka's client config keys.

``ClientSecurity`` is what ``KafkaConnection.open`` (and ``BrokerPool``, ``KafkaAdmin``)
take: the security protocol, the TLS context, whether the broker's certificate must
name the host, and the SASL mechanism and credentials. ``PLAINTEXT`` is the default.
``ClientSecurity.from_config`` builds one from the keys a Kafka client is configured
with, in either dialect; ``load_client_properties`` reads a Kafka-style properties
file (``--command-config``, ``--consumer.config``) into the dict it takes.

Keys read (Java client | librdkafka), everything else ignored::

    security.protocol                    PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL (any case)
    -- whom to trust (none given: the system's CAs) --
    ssl.truststore.location + .type=PEM  | ssl.ca.location (PEM file, directory, or "probe")
    ssl.truststore.certificates (inline) | ssl.ca.pem (inline)
    -- who we are (mutual TLS) --
    ssl.keystore.location + .type=PEM    | ssl.certificate.location + ssl.key.location
      (one PEM file: key and chain)
    ssl.keystore.key + ssl.keystore.certificate.chain (inline) | ssl.key.pem + ssl.certificate.pem
    ssl.key.password                     (both: the private key's password)
    -- how --
    ssl.endpoint.identification.algorithm  https (default: the certificate must name the
                                         host) | "" (Java) or none (librdkafka): it need not
                                       | enable.ssl.certificate.verification (default true)
    ssl.enabled.protocols                TLSv1.2,TLSv1.3 ... (the lowest and highest listed
                                         bound the handshake)
    ssl.cipher.suites                    IANA names (Java: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
                                         or OpenSSL names/cipher strings (librdkafka)
    -- SASL --
    sasl.mechanism                       | sasl.mechanisms: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    sasl.jaas.config (PlainLoginModule or ScramLoginModule, username= password=)
                                       | sasl.username + sasl.password

Refused with a ValueError naming the key (and the value, unless it is a secret):
JKS and PKCS12 stores (the stdlib's ``ssl`` reads PEM only: convert them with
``openssl``/``keytool`` and set the store type to PEM); a location given without a
store type whose file is not PEM (Java's default type is JKS, librdkafka's keystore is
PKCS12); GSSAPI and OAUTHBEARER, and a SASL protocol with no ``sasl.mechanism``
(Kafka's default there is GSSAPI); any value we do not understand.

Quirks of the stdlib, named here: inline key and chain are handed to OpenSSL through
a memfd (never written to disk) because ``load_cert_chain`` reads files only; TLS 1.3
cipher suites cannot be narrowed (OpenSSL's defaults stay on; a list naming only
TLS 1.3 suites makes TLS 1.3 the minimum); ``ssl.protocol`` is not read (the context
negotiates the highest version ``ssl.enabled.protocols`` allows).

A ``ClientSecurity`` holds an ``ssl.SSLContext``, which cannot be pickled: code that
ships settings to other processes (Spark executors) ships the properties and calls
``from_config`` where it connects.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from client.properties import load_client_properties, parse_properties
from protocol.jaas import parse_jaas

__all__ = ["PROTOCOLS", "SASL_MECHANISMS", "PLAINTEXT", "ClientSecurity",
           "load_client_properties", "parse_properties"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LOGIN_MODULES = ("org.apache.kafka.common.security.plain.PlainLoginModule",
                 "org.apache.kafka.common.security.scram.ScramLoginModule")
_TLS_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
                 "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_TRUE, _FALSE = ("true", "t", "1"), ("false", "f", "0")   # librdkafka's booleans


@dataclass(frozen=True)
class ClientSecurity:
    """How to secure a connection; see the module docstring.

    ``ssl_context`` None with a TLS protocol means the system's defaults
    (``ssl.create_default_context()``). The context's ``check_hostname`` is set to
    ``check_hostname`` (a context that does not verify certificates at all cannot
    check the host name: ValueError)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"security protocol {self.protocol!r}: expected one of "
                             f"{', '.join(PROTOCOLS)}")
        if self.uses_sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"SASL mechanism {self.sasl_mechanism!r} is not supported; "
                                 f"supported: {', '.join(SASL_MECHANISMS)}")
            if not self.sasl_username or not self.sasl_password:
                raise ValueError(f"{self.protocol} with {self.sasl_mechanism} needs a SASL "
                                 "username and password")
        ctx = self.ssl_context
        if self.uses_tls and ctx is None:
            ctx = ssl.create_default_context()
            object.__setattr__(self, "ssl_context", ctx)
        if ctx is not None and ctx.check_hostname != self.check_hostname:
            if self.check_hostname and ctx.verify_mode == ssl.CERT_NONE:
                raise ValueError("check_hostname=True needs an ssl_context that verifies "
                                 "certificates (its verify_mode is CERT_NONE)")
            ctx.check_hostname = self.check_hostname

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @classmethod
    def from_config(cls, props: Mapping[str, str]) -> ClientSecurity:
        """From Kafka client properties (Java or librdkafka names; see the module
        docstring). Values are trimmed, as Kafka's ConfigDef does. ValueError names
        the key at fault."""
        conf = _Conf(props)
        protocol = (conf.get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security.protocol={conf.get('security.protocol')!r}: expected "
                             f"one of {', '.join(PROTOCOLS)}")
        ctx, check = (_tls_context(conf) if protocol in ("SSL", "SASL_SSL")
                      else (None, True))
        if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
            return cls(protocol, ctx, check)
        mechanism, username, password = _sasl_settings(conf, protocol)
        return cls(protocol, ctx, check, mechanism, username, password)


PLAINTEXT = ClientSecurity()


# -- reading the keys ------------------------------------------------------------------------


class _Conf:
    """The properties, trimmed; ``get`` -> None when the key is absent."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = {k.strip(): str(v).strip() for k, v in props.items()}

    def get(self, key: str) -> str | None:
        return self._props.get(key)

    def first(self, *keys: str) -> tuple[str, str] | tuple[None, None]:
        """(key, value) of the first of ``keys`` present with a non-empty value."""
        for key in keys:
            value = self._props.get(key)
            if value:
                return key, value
        return None, None

    def flag(self, key: str, default: bool) -> bool:
        value = self._props.get(key)
        if value is None or value == "":
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ValueError(f"{key}={value!r}: expected true or false")


def _tls_context(conf: _Conf) -> tuple[ssl.SSLContext, bool]:
    """The client context and whether the host name is checked."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # CERT_REQUIRED, check_hostname on
    algorithm = conf.get("ssl.endpoint.identification.algorithm")
    if algorithm is None or algorithm.lower() == "https":
        check = True
    elif algorithm == "" or algorithm.lower() == "none":
        check = False
    else:
        raise ValueError(f"ssl.endpoint.identification.algorithm={algorithm!r}: expected "
                         "https, or empty (none) not to check the host name")
    if conf.flag("enable.ssl.certificate.verification", True):
        if not _load_trust(ctx, conf):
            ctx.load_default_certs()
    else:
        check = False
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    _load_identity(ctx, conf)
    _set_protocols(ctx, conf)
    _set_ciphers(ctx, conf)
    ctx.check_hostname = check
    return ctx, check


def _store_type(conf: _Conf, key: str) -> str | None:
    """The value of ``ssl.{truststore,keystore}.type`` upper-cased; PKCS12/JKS refused."""
    value = conf.get(key)
    if not value:
        return None
    kind = value.upper()
    if kind in ("JKS", "PKCS12"):
        raise ValueError(f"{key}={value!r}: pybroker's client cannot read {kind} stores (the "
                         f"Python ssl module reads PEM only); convert the store to PEM and "
                         f"set {key}=PEM")
    if kind != "PEM":
        raise ValueError(f"{key}={value!r}: expected PEM")
    return kind


def _read_pem_file(key: str, path: str, type_key: str | None = None,
                   store_type: str | None = None) -> str:
    """The text of the PEM file ``path`` (``key``'s value). ValueError when it cannot
    be read or is not PEM (a JKS or PKCS12 store: with ``type_key``, a Java store
    location whose type ``store_type`` was not given, which Kafka reads as JKS)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"{key}={path!r}: cannot read it: {e.strerror or e}") from None
    text = data.decode("utf-8", "replace")
    if "-----BEGIN " not in text:
        why = ""
        if type_key is not None and store_type is None:
            why = f" ({type_key} is not set, and Kafka's default store type is JKS)"
        fix = f"convert it and set {type_key}=PEM" if type_key else "convert it to PEM"
        raise ValueError(f"{key}={path!r} is not a PEM file{why}: pybroker's client reads PEM "
                         f"only, the Python ssl module cannot read JKS or PKCS12 stores; {fix}")
    return text


def _load_trust(ctx: ssl.SSLContext, conf: _Conf) -> bool:
    """Load the CAs the properties name; -> whether any were named."""
    loaded = False
    location = conf.get("ssl.truststore.location")
    if location:
        kind = _store_type(conf, "ssl.truststore.type")
        text = _read_pem_file("ssl.truststore.location", location, "ssl.truststore.type", kind)
        _load_cas(ctx, "ssl.truststore.location", location, cadata=text)
        loaded = True
    for key in ("ssl.truststore.certificates", "ssl.ca.pem"):
        inline = conf.get(key)
        if inline:
            if key == "ssl.truststore.certificates":
                _store_type(conf, "ssl.truststore.type")
            _load_cas(ctx, key, "(inline PEM)", cadata=_normalize_pem(key, inline))
            loaded = True
    ca = conf.get("ssl.ca.location")
    if ca:
        if ca.lower() == "probe":
            ctx.load_default_certs()
        elif os.path.isdir(ca):
            _load_cas(ctx, "ssl.ca.location", ca, capath=ca)
        else:
            _load_cas(ctx, "ssl.ca.location", ca,
                      cadata=_read_pem_file("ssl.ca.location", ca))
        loaded = True
    return loaded


def _load_cas(ctx: ssl.SSLContext, key: str, shown: str, *, cadata: str | None = None,
              capath: str | None = None) -> None:
    try:
        ctx.load_verify_locations(cadata=cadata, capath=capath)
    except (ssl.SSLError, ValueError) as e:
        raise ValueError(f"{key}={shown!r}: no usable CA certificate in it: {e}") from None


def _load_identity(ctx: ssl.SSLContext, conf: _Conf) -> None:
    """The client's own certificate chain and key (mutual TLS), if configured."""
    password = conf.get("ssl.key.password")
    location = conf.get("ssl.keystore.location")
    if location:
        kind = _store_type(conf, "ssl.keystore.type")
        text = _read_pem_file("ssl.keystore.location", location, "ssl.keystore.type", kind)
        _load_chain(ctx, "ssl.keystore.location", _normalize_pem("ssl.keystore.location", text),
                    None, password)
        return
    for chain_key, key_key in (("ssl.keystore.certificate.chain", "ssl.keystore.key"),
                               ("ssl.certificate.pem", "ssl.key.pem")):
        chain, key = conf.get(chain_key), conf.get(key_key)
        if chain or key:
            if not (chain and key):
                missing = key_key if chain else chain_key
                raise ValueError(f"{chain_key} and {key_key} go together: {missing} is not set")
            if chain_key.startswith("ssl.keystore."):
                _store_type(conf, "ssl.keystore.type")
            _load_chain(ctx, chain_key, _normalize_pem(chain_key, chain),
                        _normalize_pem(key_key, key), password)
            return
    cert_file, key_file = conf.get("ssl.certificate.location"), conf.get("ssl.key.location")
    if cert_file or key_file:
        if not cert_file:
            raise ValueError("ssl.key.location needs ssl.certificate.location")
        cert_text = _read_pem_file("ssl.certificate.location", cert_file)
        key_text = _read_pem_file("ssl.key.location", key_file) if key_file else None
        _load_chain(ctx, "ssl.certificate.location", cert_text, key_text, password)


def _load_chain(ctx: ssl.SSLContext, key: str, chain: str, private_key: str | None,
                password: str | None) -> None:
    """``ctx.load_cert_chain`` from PEM text (the key may sit in ``chain``)."""
    def ask() -> str:
        # without a callback OpenSSL would prompt on the terminal for an encrypted key
        raise ValueError(f"{key}: the private key is encrypted: set ssl.key.password")

    texts = [chain] if private_key is None else [chain, private_key]
    with _pem_files(texts) as paths:
        try:
            ctx.load_cert_chain(paths[0], paths[1] if len(paths) > 1 else None,
                                password if password else ask)
        except ssl.SSLError as e:
            hint = " (is ssl.key.password right?)" if password else ""
            raise ValueError(f"{key}: cannot load the certificate chain and private key: "
                             f"{e.reason or e}{hint}") from None


@contextlib.contextmanager
def _pem_files(texts: list[str]) -> Iterator[list[str]]:
    """Paths OpenSSL can open holding ``texts``, for as long as the block runs: memfds
    (never on disk) where the platform has them, else files in a private directory."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = []
        try:
            for text in texts:
                fd = os.memfd_create("pybroker-pem", os.MFD_CLOEXEC)
                fds.append(fd)
                os.write(fd, text.encode("utf-8"))
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="pybroker-pem-") as tmp:   # mode 0700
        paths = []
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"{i}.pem")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w",
                      encoding="utf-8") as f:
                f.write(text)
            paths.append(path)
        yield paths


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def _normalize_pem(key: str, text: str) -> str:
    """PEM blocks re-wrapped at 64 columns. An inline value from a properties file
    often has its line breaks turned into spaces (``\\`` continuations); Kafka's own
    PEM reader ignores whitespace in the base64, OpenSSL does not."""
    blocks = []
    for m in _PEM_BLOCK.finditer(text):
        label, body = m.group(1), m.group(2)
        if ":" in body:   # RFC 1421 headers (Proc-Type, DEK-Info): keep the layout
            blocks.append(m.group(0).strip())
            continue
        b64 = "".join(body.split())
        lines = [b64[i:i + 64] for i in range(0, len(b64), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    if not blocks:
        raise ValueError(f"{key}: no PEM block (-----BEGIN ...-----) in the value")
    return "\n".join(blocks) + "\n"


def _set_protocols(ctx: ssl.SSLContext, conf: _Conf) -> None:
    value = conf.get("ssl.enabled.protocols")
    if not value:
        return
    versions = []
    for name in (n.strip() for n in value.split(",")):
        if not name:
            continue
        if name not in _TLS_VERSIONS:
            raise ValueError(f"ssl.enabled.protocols={value!r}: unknown or unsupported protocol "
                             f"{name!r}; expected some of {', '.join(_TLS_VERSIONS)}")
        versions.append(_TLS_VERSIONS[name])
    if not versions:
        raise ValueError(f"ssl.enabled.protocols={value!r}: no protocol listed")
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)


# -- cipher suites ----------------------------------------------------------------------------

_TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                 "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256",
                 "TLS_AES_128_CCM_8_SHA256")
# IANA key exchange + authentication -> OpenSSL's description's Kx= and Au=
_IANA_KX = {"ECDHE_RSA": ("ECDH", "RSA"), "ECDHE_ECDSA": ("ECDH", "ECDSA"),
            "DHE_RSA": ("DH", "RSA"), "DHE_DSS": ("DH", "DSS"), "RSA": ("RSA", "RSA")}
_IANA_SUITE = re.compile(r"TLS_(?P<kx>[A-Z_]+?)_WITH_(?P<alg>AES|CAMELLIA|ARIA|CHACHA20)"
                         r"(?:_(?P<bits>128|256))?_(?P<mode>GCM|CBC|CCM_8|CCM|POLY1305)"
                         r"(?:_(?P<hash>SHA|SHA256|SHA384))?")


def _set_ciphers(ctx: ssl.SSLContext, conf: _Conf) -> None:
    """``ssl.cipher.suites``: a comma list of IANA (Java) or OpenSSL names, or an
    OpenSSL cipher string (librdkafka; it has ``:``)."""
    value = conf.get("ssl.cipher.suites")
    if not value:
        return
    if ":" in value or "!" in value or "@" in value:
        names = [value]   # an OpenSSL cipher string, as librdkafka passes it on
    else:
        names = []
        tls13 = False
        for name in (n.strip() for n in value.split(",")):
            if not name:
                continue
            if name in _TLS13_SUITES:
                tls13 = True
                continue
            openssl_name = _openssl_cipher(name)
            if openssl_name is None:
                raise ValueError(f"ssl.cipher.suites={value!r}: unknown cipher suite {name!r}")
            names.append(openssl_name)
        if not names:
            if tls13:   # only TLS 1.3 suites listed: only TLS 1.3 can be negotiated
                ctx.minimum_version = ssl.TLSVersion.TLSv1_3
            return
    try:
        ctx.set_ciphers(":".join(names))
    except ssl.SSLError as e:
        raise ValueError(f"ssl.cipher.suites={value!r}: {e.reason or e}") from None


def _openssl_cipher(name: str) -> str | None:
    """OpenSSL's name for an IANA (or OpenSSL) TLS 1.2 cipher suite name; None if unknown."""
    names, by_parts = _cipher_catalog()
    if name in names:
        return name
    m = _IANA_SUITE.fullmatch(name)
    if m is None or m["kx"] not in _IANA_KX:
        return None
    alg, bits, mode, mac = m["alg"], m["bits"], m["mode"], m["hash"]
    if alg == "CHACHA20":
        enc = "CHACHA20/POLY1305(256)"
    else:
        label = {"AES": "AES", "CAMELLIA": "Camellia", "ARIA": "ARIA"}[alg]
        suffix = {"GCM": "GCM", "CBC": "", "CCM": "CCM", "CCM_8": "CCM8"}.get(mode)
        if suffix is None or bits is None:
            return None
        enc = f"{label}{suffix}({bits})"
    if mode in ("GCM", "CCM", "CCM_8", "POLY1305"):
        mac = "AEAD"
    elif mac == "SHA":
        mac = "SHA1"
    kx, au = _IANA_KX[m["kx"]]
    return by_parts.get((kx, au, enc, mac or ""))


@functools.cache
def _cipher_catalog() -> tuple[frozenset[str], dict[tuple[str, str, str, str], str]]:
    """Every TLS 1.2 cipher this OpenSSL knows: its names, and (Kx, Au, Enc, Mac) -> name
    parsed from its description (``ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 Kx=ECDH Au=RSA
    Enc=AESGCM(128) Mac=AEAD``)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    names: set[str] = set()
    by_parts: dict[tuple[str, str, str, str], str] = {}
    for c in ctx.get_ciphers():
        names.add(c["name"])
        attrs = dict(p.split("=", 1) for p in c["description"].split() if "=" in p)
        parts = (attrs.get("Kx", ""), attrs.get("Au", ""), attrs.get("Enc", ""),
                 attrs.get("Mac", ""))
        by_parts.setdefault(parts, c["name"])
    return frozenset(names), by_parts


# -- SASL ------------------------------------------------------------------------------------


def _sasl_settings(conf: _Conf, protocol: str) -> tuple[str, str, str]:
    """(mechanism, username, password) for a SASL protocol."""
    key, raw = conf.first("sasl.mechanism", "sasl.mechanisms")
    if raw is None:
        raise ValueError(f"security.protocol={protocol} needs sasl.mechanism (PLAIN, "
                         "SCRAM-SHA-256 or SCRAM-SHA-512): Kafka's default, GSSAPI, is not "
                         "supported by pybroker's client")
    mechanism = raw.upper()
    if mechanism not in SASL_MECHANISMS:
        raise ValueError(f"{key}={raw!r} is not supported by pybroker's client; expected one "
                         f"of {', '.join(SASL_MECHANISMS)}")
    jaas = conf.get("sasl.jaas.config")
    if jaas:
        username, password = _jaas_credentials(jaas)
        where = "sasl.jaas.config"
    else:
        username, password = conf.get("sasl.username"), conf.get("sasl.password")
        where = "sasl.username and sasl.password"
    if not username or not password:
        raise ValueError(f"SASL/{mechanism} needs a username and a password: set "
                         "sasl.jaas.config (username=\"...\" password=\"...\") or "
                         f"sasl.username and sasl.password ({where} gave "
                         f"{'no username' if not username else 'no password'})")
    return mechanism, username, password


def _jaas_credentials(text: str) -> tuple[str | None, str | None]:
    """username and password from a PlainLoginModule or ScramLoginModule entry."""
    try:
        entry = parse_jaas(text)
    except ValueError as e:   # the value holds a password: not echoed
        raise ValueError(f"sasl.jaas.config: {e}") from None
    if entry.login_module not in LOGIN_MODULES:
        raise ValueError(f"sasl.jaas.config: login module {entry.login_module!r} is not "
                         f"supported by pybroker's client; expected one of "
                         f"{', '.join(LOGIN_MODULES)}")
    return entry.options.get("username"), entry.options.get("password")
