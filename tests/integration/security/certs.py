"""Throwaway PKI for the security tests, made with the ``openssl`` command.

    pki = make_pki(tmp_path)
    pki.ca            # CA certificate (PEM): every truststore
    pki.keystore("broker")   # PEM file: private key + certificate chain, CN=broker,
                             # SAN IP:127.0.0.1 and DNS:localhost (host-name checks pass)
    pki.cert("alice"), pki.key("alice")   # separate files, as librdkafka wants them

Certificates are signed by the CA, valid for a day, RSA 2048 (fast to make).
``subject`` gives the DN a broker derives from the certificate, RFC 2253 order.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass
class Pki:
    dir: Path

    @property
    def ca(self) -> str:
        return str(self.dir / "ca.pem")

    def cert(self, name: str) -> str:
        return str(self.dir / f"{name}.crt")

    def key(self, name: str) -> str:
        return str(self.dir / f"{name}.key")

    def keystore(self, name: str) -> str:
        """One PEM file with the key and the certificate (Kafka's PEM keystore)."""
        return str(self.dir / f"{name}.keystore.pem")

    def pkcs12(self, name: str) -> str:
        return str(self.dir / f"{name}.p12")

    @staticmethod
    def subject(name: str) -> str:
        return f"CN={name},OU=test,O=pybroker"

    def issue(self, name: str) -> None:
        d = self.dir
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                 "-subj", f"/O=pybroker/OU=test/CN={name}", "-out", f"{name}.csr", cwd=d)
        (d / f"{name}.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth,clientAuth\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=d)
        (d / f"{name}.keystore.pem").write_text(
            (d / f"{name}.key").read_text() + (d / f"{name}.crt").read_text())
        _openssl("pkcs12", "-export", "-in", f"{name}.crt", "-inkey", f"{name}.key",
                 "-passout", "pass:p12-secret", "-out", f"{name}.p12", cwd=d)


def make_pki(directory: Path, names: tuple[str, ...] = ("broker", "alice", "mallory")) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-subj", "/O=pybroker/CN=pybroker-test-ca", "-days", "1", "-out", "ca.pem",
             cwd=directory)
    pki = Pki(directory)
    for n in names:
        pki.issue(n)
    return pki
