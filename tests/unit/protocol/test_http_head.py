"""protocol/http_head.py, the HTTP request-head parser of the metrics endpoint and
the web console: what it accepts, and that hostile input gives an HttpError with
a 4xx/5xx status, never another exception; and encode_response."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.http_head import MAX_HEAD_BYTES, HttpError, Request, encode_response, parse_head


def head(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode("latin-1")


def status_of(data: bytes) -> int:
    with pytest.raises(HttpError) as e:
        parse_head(data)
    return e.value.status


def test_get_with_query_and_headers() -> None:
    r = parse_head(head("GET /topic?name=a%3Cb%3E&refresh=5&name=second HTTP/1.1\n"
                        "Host: 127.0.0.1:8080\nUser-Agent: x\n\n"))
    assert r == Request("GET", "/topic", {"name": "a<b>", "refresh": "5"}, "HTTP/1.1",
                        {"host": "127.0.0.1:8080", "user-agent": "x"})
    assert r.param("missing", "d") == "d"


def test_head_absolute_form_plus_and_bare_lf() -> None:
    r = parse_head(b"HEAD http://example.invalid/messages?topic=a+b&ts= HTTP/1.0\n\n")
    assert (r.method, r.path, r.query) == ("HEAD", "/messages", {"topic": "a b", "ts": ""})


def test_percent_decoded_path() -> None:
    assert parse_head(head("GET /%74opics HTTP/1.1\n\n")).path == "/topics"


@pytest.mark.parametrize("line", [
    "GET /\n\n",                               # two parts
    "GET  / HTTP/1.1\n\n",                     # empty part
    "GET / HTTP/1.1 extra\n\n",
    "G(T / HTTP/1.1\n\n",                      # not a token
    "GET / HTTQ/1.1\n\n",
    "GET / HTTP/11\n\n",
    "GET topics HTTP/1.1\n\n",                 # neither origin nor absolute form
    "GET /a\x01b HTTP/1.1\n\n",                # control character
    "GET /%ff%fe HTTP/1.1\n\n",                # not UTF-8 once decoded
    "GET /?a=%ff HTTP/1.1\n\n",
    "GET / HTTP/1.1\nno colon here\n\n",
    "GET / HTTP/1.1\nBad Name: x\n\n",
    "GET / HTTP/1.1\nHost: a\n folded\n\n",    # obsolete line folding
    "GET / HTTP/1.1\nContent-Length: 5\n\n",   # a body
    "GET / HTTP/1.1\nContent-Length: -1\n\n",
    "GET / HTTP/1.1\nTransfer-Encoding: chunked\n\n",
    "GET / HTTP/1.1\nHost: a\nHost: b\n\n",
    "\n\n",
])
def test_bad_requests_are_400(line: str) -> None:
    assert status_of(head(line)) == 400


def test_non_ascii_request_line_is_400() -> None:
    assert status_of("GET /é HTTP/1.1\r\n\r\n".encode()) == 400


def test_other_methods_405_other_versions_505() -> None:
    assert status_of(head("POST / HTTP/1.1\n\n")) == 405
    assert status_of(head("DELETE /topic?name=x HTTP/1.1\n\n")) == 405
    assert status_of(head("GET / HTTP/2.0\n\n")) == 505


def test_oversize_inputs() -> None:
    assert status_of(b"GET /" + b"a" * MAX_HEAD_BYTES + b" HTTP/1.1\r\n\r\n") == 431
    assert status_of(head("GET /" + "a" * 5000 + " HTTP/1.1\n\n")) == 414
    many = "".join(f"X-{i}: v\n" for i in range(100))
    assert status_of(head(f"GET / HTTP/1.1\n{many}\n")) == 431
    query = "&".join(f"k{i}=v" for i in range(100))
    assert status_of(head(f"GET /?{query} HTTP/1.1\n\n")) == 400


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_parse_or_http_error(data: bytes) -> None:
    try:
        r = parse_head(data)
    except HttpError as e:
        assert 400 <= e.status < 600
    else:
        assert r.method in ("GET", "HEAD") and r.path.startswith("/")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7f), max_size=80),
       st.sampled_from(["GET ", "HEAD ", "POST "]))
def test_any_ascii_target_parse_or_http_error(target: str, method: str) -> None:
    try:
        parse_head(f"{method}{target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    except HttpError as e:
        assert 400 <= e.status < 600


def test_encode_response_closes_and_counts_the_body_also_for_head() -> None:
    raw = encode_response(404, b"nope\n", headers={"Allow": "GET, HEAD"})
    assert raw == (b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                   b"Content-Length: 5\r\nAllow: GET, HEAD\r\nConnection: close\r\n\r\nnope\n")
    head_only = encode_response(200, b"12345", "text/html", head_only=True)
    assert head_only.endswith(b"Content-Length: 5\r\nConnection: close\r\n\r\n")
    assert encode_response(299, b"").startswith(b"HTTP/1.1 299 Status\r\n")
