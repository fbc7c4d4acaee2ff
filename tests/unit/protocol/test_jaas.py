"""JAAS config entries as Kafka's JaasConfig reads them."""

from __future__ import annotations

import pytest

from protocol.jaas import JaasEntry, parse_jaas, plain_users

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_the_broker_plain_example() -> None:
    entry = parse_jaas(f'{PLAIN} required username="admin" password="admin-secret" '
                       'user_admin="admin-secret" user_alice="alice-secret";')
    assert entry == JaasEntry(PLAIN, "required", {
        "username": "admin", "password": "admin-secret",
        "user_admin": "admin-secret", "user_alice": "alice-secret"})
    assert plain_users(entry) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_whitespace_and_newlines_anywhere() -> None:
    text = f'\n  {SCRAM}\n\trequired\n  username = "alice"\r\n  password=\n"a b"\n  ;  \n'
    assert parse_jaas(text) == JaasEntry(SCRAM, "required", {"username": "alice", "password": "a b"})
    assert parse_jaas(f"{SCRAM} optional;") == JaasEntry(SCRAM, "optional", {})
    assert parse_jaas("m sufficient a=b\nc=d;").options == {"a": "b", "c": "d"}


def test_unquoted_and_single_quoted_values() -> None:
    entry = parse_jaas(f"""{SCRAM} required a='say "hi"' b="it's" c=x.y-z_1:2@3;""")
    assert entry.options == {"a": 'say "hi"', "b": "it's", "c": "x.y-z_1:2@3"}


def test_adjacent_quoted_strings_are_two_tokens() -> None:
    with pytest.raises(ValueError, match="expected an option name, found 's'"):
        parse_jaas(f"{SCRAM} required password='it''s';")


def test_backslash_escapes() -> None:
    entry = parse_jaas(r'm required a="q\"uote" b="back\\slash" c="tab\there" d="\101\60\7" '
                       r"e='\'' f='\p';")
    assert entry.options == {"a": 'q"uote', "b": "back\\slash", "c": "tab\there",
                             "d": "A0\x07", "e": "'", "f": "p"}


def test_equals_semicolon_and_slash_inside_quotes() -> None:
    entry = parse_jaas('m required p="a=b;c/d,e" empty="";')
    assert entry.options == {"p": "a=b;c/d,e", "empty": ""}


def test_comments_as_in_kafka() -> None:
    text = ("m /* block\n comment */ required // to the end of the line\n"
            " a=b / a lone slash comments too\n c=d;")
    assert parse_jaas(text) == JaasEntry("m", "required", {"a": "b", "c": "d"})


@pytest.mark.parametrize("flag", ["required", "REQUISITE", "Sufficient", "optional"])
def test_flags_are_case_insensitive(flag: str) -> None:
    assert parse_jaas(f"m {flag};").flag == flag.lower()


def test_later_option_wins() -> None:
    assert parse_jaas("m required a=1 a=2;").options == {"a": "2"}


@pytest.mark.parametrize("text, reason", [
    ("", "expected a login module class, found the end of the text"),
    ('"m" required;', "expected a login module class, found 'm'"),
    ("m", "control flag not specified after 'm'"),
    ("m;", "control flag not specified"),
    ("m mandatory a=b;", "invalid login module control flag 'mandatory'"),
    ("m required a=b", "not terminated by ';'"),
    ("m required a;", "value not specified for key 'a'"),
    ("m required a=;", "value not specified for key 'a'"),
    ("m required a= b=c;", "expected an option name, found '='"),  # a=b, then =c
    ("m required =b;", "expected an option name, found '='"),
    ('m required a="open;', "not closed"),
    ('m required a="line\nbreak";', "not closed"),
    ("m required /* open;", "unterminated /\\* comment"),
    ("m required; n required;", "only one login module is allowed; found 'n'"),
])
def test_malformed(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_jaas(text)


def test_plain_users_ignores_other_options() -> None:
    entry = parse_jaas('m required username="admin" user_="x" user_bob=b usr_carol=c;')
    assert plain_users(entry) == {"bob": "b"}
