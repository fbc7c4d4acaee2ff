"""Principals: who a connection is, as Kafka's DefaultKafkaPrincipalBuilder says.

* PLAINTEXT: ``User:ANONYMOUS``.
* SASL_PLAINTEXT / SASL_SSL: ``User:<the authenticated name>``.
* SSL: the client certificate's subject, as an RFC 2253 distinguished name
  (what Java's ``X500Principal.getName()`` prints: the subject's RDNs in
  reverse order of encoding, ``CN=alice,OU=eng,O=Example,C=US``), mapped
  through ``ssl.principal.mapping.rules``; ``User:ANONYMOUS`` when the client
  sent no certificate (``ssl.client.auth`` none or requested).

``ssl.principal.mapping.rules`` (KIP-371, Kafka's SslPrincipalMapper): a list
of ``RULE:<regex>/<replacement>/[L|U]`` and ``DEFAULT``, separated by commas
(a comma inside a rule's regex belongs to the rule). The first rule whose regex
matches the whole DN gives the name (``$1`` etc. in the replacement; ``L`` / ``U``
lower- or upper-case it); ``DEFAULT`` gives the DN itself. No rule matching is
an authentication failure, as in Kafka.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ANONYMOUS = "User:ANONYMOUS"

# Attribute names Java's X500Principal.getName() (RFC 2253) prints by keyword;
# others print as the OID's name Python gives (rare in practice).
_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
             "stateOrProvinceName": "ST", "organizationName": "O",
             "organizationalUnitName": "OU", "streetAddress": "STREET",
             "domainComponent": "DC", "userId": "UID"}
_RULE = re.compile(r"(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)")


class NoMatchingRule(ValueError):
    """No ``ssl.principal.mapping.rules`` rule matched the certificate's DN."""


def rfc2253(subject: Any) -> str:
    """``ssl.SSLSocket.getpeercert()['subject']`` (RDNs in encoding order, each a
    tuple of (name, value) pairs) as an RFC 2253 string."""
    rdns = []
    for rdn in reversed(subject or ()):
        rdns.append("+".join(f"{_KEYWORDS.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


@dataclass(frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        assert self.pattern is not None
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        name = m.expand(self.replacement)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalMapper:
    """``ssl.principal.mapping.rules``, parsed once per listener."""

    def __init__(self, rules: str = "DEFAULT", key: str = "ssl.principal.mapping.rules"
                 ) -> None:
        self.rules: list[_Rule] = []
        text = (rules or "DEFAULT").strip()
        pos = 0
        for m in _RULE.finditer(text):
            gap = text[pos:m.start()].strip().strip(",").strip()
            if gap:
                raise ValueError(f"Invalid value {rules!r} for configuration {key}: "
                                 f"cannot parse {gap!r}")
            pos = m.end()
            if m.group(1):
                self.rules.append(_Rule(True))
                continue
            try:
                pattern = re.compile(m.group(2).replace("\\/", "/"))
            except re.error as e:
                raise ValueError(f"Invalid value {rules!r} for configuration {key}: "
                                 f"bad regex {m.group(2)!r}: {e}") from None
            # Java's $1 -> Python's \g<1>
            replacement = re.sub(r"\$(\d+)", r"\\g<\1>", m.group(3).replace("\\/", "/"))
            self.rules.append(_Rule(False, pattern, replacement, m.group(4)))
        tail = text[pos:].strip().strip(",").strip()
        if tail or not self.rules:
            raise ValueError(f"Invalid value {rules!r} for configuration {key}: "
                             f"cannot parse {tail or text!r}")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            got = rule.apply(dn)
            if got is not None:
                return got
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")

    def principal(self, peer_cert: dict[str, Any] | None) -> str:
        """The principal of a TLS peer (``getpeercert()``; None: no certificate)."""
        if not peer_cert:
            return ANONYMOUS
        return f"User:{self.name(rfc2253(peer_cert.get('subject')))}"
