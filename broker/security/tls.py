"""TLS contexts for SSL and SASL_SSL listeners, from Kafka's ``ssl.*`` keys.

Every key is read per listener (``listener.name.<l>.ssl.*`` before ``ssl.*``):

* keystore — ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (one PEM file
  holding the private key and the certificate chain) or inline
  ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``; the key may be
  encrypted (``ssl.key.password``). ``ssl.keystore.type=PKCS12`` is read with
  the ``openssl`` command (the stdlib cannot parse PKCS12; ``ssl.keystore.password``
  unlocks it). JKS is refused with a ConfigError saying how to convert it.
* truststore — the CA certificates peers are checked against: PEM
  ``ssl.truststore.location`` or inline ``ssl.truststore.certificates``;
  PKCS12 through ``openssl`` as above. None given: the system's CAs.
* ``ssl.client.auth`` — required (CERT_REQUIRED), requested (CERT_OPTIONAL: a
  certificate that is sent must verify), none.
* ``ssl.enabled.protocols`` — TLSv1.2 / TLSv1.3 (older ones are refused: the
  stdlib's OpenSSL no longer offers them); ``ssl.cipher.suites`` — OpenSSL cipher
  names for TLS 1.2 (``ECDHE-RSA-AES128-GCM-SHA256``); TLS 1.3 suites are
  OpenSSL's defaults (Python cannot restrict them).
* ``ssl.endpoint.identification.algorithm`` — ``https`` (the default) checks the
  server's host name on the broker's outgoing connections; empty does not.

Inline PEM text is handed to OpenSSL through a temporary file in a private
directory that is removed at once (``load_cert_chain`` reads only files).
"""

from __future__ import annotations

import os
import ssl
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from broker.config import ConfigError

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL,
                "none": ssl.CERT_NONE}


def _key(listener: str, key: str) -> str:
    return f"listener.name.{listener.lower()}.{key} (or {key})"


def server_context(config: Any, listener: str) -> ssl.SSLContext:
    """The context an SSL / SASL_SSL listener accepts with."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(ctx, config, listener)
    _load_keystore(ctx, config, listener, required=True)
    auth = config.for_listener(listener, "ssl.client.auth")
    if auth != "none":
        if not _load_truststore(ctx, config, listener):
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


def client_context(config: Any, listener: str) -> tuple[ssl.SSLContext, bool]:
    """The context the broker's own connections to ``listener`` use, and whether
    they check the host name: the listener's truststore, and its keystore as
    the client certificate when there is one (mutual TLS between brokers)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(ctx, config, listener)
    if not _load_truststore(ctx, config, listener):
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    _load_keystore(ctx, config, listener, required=False)
    check = bool(config.for_listener(listener, "ssl.endpoint.identification.algorithm"))
    ctx.check_hostname = check
    return ctx, check


def _versions(ctx: ssl.SSLContext, config: Any, listener: str) -> None:
    raw = config.for_listener(listener, "ssl.enabled.protocols") or ""
    wanted = [p.strip() for p in raw.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in _PROTOCOLS]
    if unknown or not wanted:
        raise ConfigError(f"Invalid value {raw!r} for configuration "
                          f"{_key(listener, 'ssl.enabled.protocols')}: supported are "
                          f"{', '.join(_PROTOCOLS)}")
    versions = sorted(_PROTOCOLS[p] for p in wanted)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = config.for_listener(listener, "ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(c.strip() for c in ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise ConfigError(f"Invalid value {ciphers!r} for configuration "
                              f"{_key(listener, 'ssl.cipher.suites')}: no cipher OpenSSL "
                              "knows (use OpenSSL names)") from None


def _load_keystore(ctx: ssl.SSLContext, config: Any, listener: str, *, required: bool
                   ) -> None:
    kind = (config.for_listener(listener, "ssl.keystore.type") or "JKS").upper()
    location = config.for_listener(listener, "ssl.keystore.location")
    key = config.for_listener(listener, "ssl.keystore.key")
    chain = config.for_listener(listener, "ssl.keystore.certificate.chain")
    key_password = config.for_listener(listener, "ssl.key.password")
    if not location and not (key and chain):
        if required:
            raise ConfigError(f"{_key(listener, 'ssl.keystore.location')} (or "
                              f"ssl.keystore.key and ssl.keystore.certificate.chain) must "
                              f"be set for TLS listener {listener}")
        return
    where = _key(listener, "ssl.keystore.location")
    try:
        if location and kind == "PKCS12":
            pem = _pkcs12_to_pem(location, config.for_listener(listener,
                                                               "ssl.keystore.password"), where)
            with _pem_file(pem) as path:
                ctx.load_cert_chain(path)
        elif location:
            _pem_type(kind, listener, "ssl.keystore.type")
            ctx.load_cert_chain(location, password=key_password)
        else:
            _pem_type(kind, listener, "ssl.keystore.type")
            with _pem_file(f"{key.strip()}\n{chain.strip()}\n") as path:
                ctx.load_cert_chain(path, password=key_password)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"Invalid keystore for listener {listener} ({where}="
                          f"{location or '<inline>'}): {e}") from None


def _load_truststore(ctx: ssl.SSLContext, config: Any, listener: str) -> bool:
    kind = (config.for_listener(listener, "ssl.truststore.type") or "JKS").upper()
    location = config.for_listener(listener, "ssl.truststore.location")
    inline = config.for_listener(listener, "ssl.truststore.certificates")
    where = _key(listener, "ssl.truststore.location")
    try:
        if location and kind == "PKCS12":
            ctx.load_verify_locations(cadata=_pkcs12_to_pem(
                location, config.for_listener(listener, "ssl.truststore.password"), where,
                certs_only=True))
        elif location:
            _pem_type(kind, listener, "ssl.truststore.type")
            ctx.load_verify_locations(cafile=location)
        elif inline:
            _pem_type(kind, listener, "ssl.truststore.type")
            ctx.load_verify_locations(cadata=inline)
        else:
            return False
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"Invalid truststore for listener {listener} ({where}="
                          f"{location or '<inline>'}): {e}") from None
    return True


def _pem_type(kind: str, listener: str, key: str) -> None:
    if kind != "PEM":
        raise ConfigError(f"Invalid value {kind!r} for configuration {_key(listener, key)}: "
                          "PEM and PKCS12 are supported (convert a JKS store with keytool "
                          "-importkeystore -deststoretype PKCS12)")


def _pkcs12_to_pem(path: str, password: str | None, where: str, certs_only: bool = False
                   ) -> str:
    """A PKCS12 store as PEM text, through ``openssl pkcs12`` (the password goes
    through the environment, never the command line)."""
    args = ["openssl", "pkcs12", "-in", path, "-passin", "env:PYBROKER_P12_PASSWORD"]
    args += ["-nokeys"] if certs_only else ["-nodes"]
    env = {**os.environ, "PYBROKER_P12_PASSWORD": password or ""}
    try:
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ConfigError(f"cannot read PKCS12 store {where}={path}: the openssl command "
                          f"is needed ({e})") from None
    if done.returncode != 0:
        raise ConfigError(f"cannot read PKCS12 store {where}={path}: "
                          f"{done.stderr.strip().splitlines()[-1:] or done.returncode}")
    return done.stdout


@contextmanager
def _pem_file(text: str) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="pybroker-tls-") as d:
        path = os.path.join(d, "store.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        yield path
