"""A minimal HTTP/1.1 request-head parser, sans-I/O (bytes in, a request or an
error out), for the metrics endpoint's ``GET /metrics``.

Accepted: ``METHOD SP target SP HTTP/1.x CRLF`` then header lines up to an empty
line (CRLF CRLF; bare LF is tolerated, as most servers do). The head must fit
in ``MAX_HEAD_BYTES`` (the server reads no more; a longer one is 431). Only the
path of the target matters (a query string is ignored). Header names are
case-insensitive and kept lower-cased; a line without a colon, a non-ASCII
head, or a bad request line is ``BadRequest`` (400). The body of a request, if
any, is never read: every response closes the connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_HEAD_BYTES = 8192


class BadRequest(ValueError):
    """The head is not an HTTP/1.x request; ``status`` is the answer's code."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str
    version: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0].split("#", 1)[0]


def parse_head(head: bytes) -> HttpRequest:
    """Parse a request head (everything up to and including the empty line)."""
    if len(head) > MAX_HEAD_BYTES:
        raise BadRequest("request head too large", 431)
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest("request head is not ASCII") from None
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise BadRequest("empty request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
        raise BadRequest(f"bad request line {lines[0][:100]!r}")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"unsupported protocol version {version[:20]!r}", 505)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadRequest(f"bad header line {line[:100]!r}")
        headers[name.lower()] = value.strip()
    return HttpRequest(method.upper(), target, version, headers)


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           408: "Request Timeout", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 505: "HTTP Version Not Supported"}


def response_bytes(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                   *, head_only: bool = False, extra: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes the connection."""
    headers = {"Content-Type": content_type, "Content-Length": str(len(body)),
               "Connection": "close", **(extra or {})}
    head = f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("ascii") + (b"" if head_only else body)
