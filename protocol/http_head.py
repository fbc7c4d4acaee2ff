"""HTTP/1.1 for pybroker's two small HTTP servers, the metrics endpoint
(broker/metrics/http_endpoint.py) and the web console (tools/console/server.py):
the request-head parser (sans-I/O: bytes in, a ``Request`` or an ``HttpError``
out) and ``encode_response``. Their socket sides are theirs; this is written once.

What it accepts (RFC 9112, the subset a browser's GET needs):

    request-line = method SP request-target SP HTTP-version CRLF
    header-field = field-name ":" OWS field-value OWS CRLF      (at most MAX_HEADERS)
    CRLF                                                         (end of the head)

* The head (request line + headers + the empty line) is at most MAX_HEAD_BYTES;
  the servers stop reading there and answer 431. Bare LF line ends are
  tolerated (RFC 9112 section 2.2 allows it); obsolete line folding is not (400).
* Methods: GET and HEAD; any other well-formed token is 405; a malformed one 400.
* Versions: HTTP/1.0 and HTTP/1.1; another well-formed HTTP/x.y is 505.
* Request target: origin-form ("/path?query") or absolute-form
  ("http://host/path?query", whose host is ignored); at most MAX_TARGET_BYTES,
  ASCII without controls or spaces. The path is percent-decoded (UTF-8, invalid
  sequences -> 400); "..", NUL and the like are harmless because paths only
  select a route, never a file.
* Query: ``application/x-www-form-urlencoded`` pairs; a repeated key keeps its
  first value; at most MAX_QUERY_PARAMS pairs.
* A body is never read: a request announcing one (Content-Length > 0 or any
  Transfer-Encoding) is 400, and every response closes the connection, so no
  unread byte can be taken for the next request.

Every failure is an ``HttpError`` carrying the status to answer; nothing else
escapes ``parse_head`` for any input (the unit tests feed it hostile bytes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote, urlsplit

MAX_HEAD_BYTES = 16 * 1024
MAX_TARGET_BYTES = 4 * 1024
MAX_HEADERS = 64
MAX_QUERY_PARAMS = 32
ALLOWED_METHODS = ("GET", "HEAD")

_TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_VERSION = re.compile(rb"^HTTP/(\d)\.(\d)$")
_TARGET_CHARS = re.compile(rb"^[\x21-\x7e]+$")


class HttpError(Exception):
    """A request the console refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Request:
    method: str
    path: str                                   # percent-decoded, always starts with "/"
    query: dict[str, str] = field(default_factory=dict)
    version: str = "HTTP/1.1"
    headers: dict[str, str] = field(default_factory=dict)   # lower-cased names

    def param(self, name: str, default: str = "") -> str:
        return self.query.get(name, default)


def parse_head(head: bytes) -> Request:
    """Parse one request head (everything up to and including the blank line).
    -> Request; HttpError(400/405/414/431/505) on anything else."""
    if len(head) > MAX_HEAD_BYTES:
        raise HttpError(431, "request head too large")
    lines = head.split(b"\n")
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    while lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise HttpError(400, "empty request")
    method, target, version = _request_line(lines[0])
    headers = _headers(lines[1:])
    if headers.get("transfer-encoding") is not None:
        raise HttpError(400, "a request body is not accepted")
    length = headers.get("content-length", "0").strip()
    if not length.isdigit() or int(length) != 0:
        raise HttpError(400, "a request body is not accepted")
    path, query = _target(target)
    return Request(method, path, query, version, headers)


def _request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.split(b" ")
    if len(parts) != 3 or not all(parts):
        raise HttpError(400, "malformed request line")
    method, target, version = parts
    if not _TOKEN.match(method):
        raise HttpError(400, "malformed method")
    m = _VERSION.match(version)
    if m is None:
        raise HttpError(400, "malformed HTTP version")
    if (m.group(1), m.group(2)) not in ((b"1", b"0"), (b"1", b"1")):
        raise HttpError(505, "HTTP version not supported")
    if len(target) > MAX_TARGET_BYTES:
        raise HttpError(414, "request target too long")
    if not _TARGET_CHARS.match(target):
        raise HttpError(400, "malformed request target")
    name = method.decode("ascii")
    if name not in ALLOWED_METHODS:
        raise HttpError(405, f"method {name} not allowed")
    return name, target.decode("ascii"), version.decode("ascii")


def _headers(lines: list[bytes]) -> dict[str, str]:
    if len(lines) > MAX_HEADERS:
        raise HttpError(431, "too many header fields")
    out: dict[str, str] = {}
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            raise HttpError(400, "obsolete header line folding")
        name, sep, value = line.partition(b":")
        if not sep or not _TOKEN.match(name):
            raise HttpError(400, "malformed header field")
        key = name.decode("ascii").lower()
        text = value.strip(b" \t").decode("latin-1")
        if key in out and key in ("content-length", "host"):
            raise HttpError(400, f"repeated {key} header")
        out[key] = text if key not in out else f"{out[key]}, {text}"
    return out


def _target(target: str) -> tuple[str, dict[str, str]]:
    if target.startswith("/"):
        raw_path, _, raw_query = target.partition("?")
    elif target.lower().startswith(("http://", "https://")):
        try:
            parts = urlsplit(target)
        except ValueError:
            raise HttpError(400, "malformed request target") from None
        raw_path, raw_query = parts.path or "/", parts.query
    else:
        raise HttpError(400, "request target must be origin-form or absolute-form")
    raw_path = raw_path.partition("#")[0]
    try:
        path = unquote(raw_path, errors="strict")
        pairs = parse_qsl(raw_query.partition("#")[0], keep_blank_values=True,
                          errors="strict", max_num_fields=MAX_QUERY_PARAMS)
    except (UnicodeDecodeError, ValueError):
        raise HttpError(400, "malformed percent-encoding or query") from None
    query: dict[str, str] = {}
    for key, value in pairs:
        query.setdefault(key, value)
    return path, query


def encode_response(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                    *, head_only: bool = False, headers: Mapping[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes the connection: the status line,
    Content-Type, Content-Length (of ``body``, also for HEAD), ``headers``,
    ``Connection: close``, then ``body`` unless ``head_only``."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}",
             f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (b"" if head_only else body)


__all__ = ["ALLOWED_METHODS", "MAX_HEAD_BYTES", "HttpError", "Request", "encode_response",
           "parse_head"]
