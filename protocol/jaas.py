"""One Kafka JAAS configuration entry, the value of ``sasl.jaas.config`` or
``listener.name.<listener>.<mechanism>.sasl.jaas.config``.

Form (Kafka's JaasConfig)::

    <login module class> <flag> (<option>=<value>)* ;

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

Tokens, as Kafka's java.io.StreamTokenizer set-up reads them:

* whitespace is any character up to and including space (so newlines are whitespace);
* a word is a run of anything else except ``;`` ``=`` ``"`` ``'`` and ``/``;
* a quoted value is ``"..."`` or ``'...'``, closed on the line it opens on. A backslash
  escapes: ``\\n \\t \\r \\b \\f \\a \\v`` are control characters, ``\\`` and 1-3 octal digits
  (at most 0o377) that code point, ``\\`` and anything else that character (``\\"``, ``\\\\``);
* ``/`` starts a comment: ``/* ... */``, otherwise to the end of the line. So a value holding
  ``/`` must be quoted.

Rules: the login module is a word; the flag is one of required, requisite, sufficient,
optional (any case, kept lower-case here); each option is ``word = (word | quoted)``; a later
option of the same name wins, as in Kafka's HashMap; the ``;`` is required. Kafka allows only
one login module in these properties, so text after the ``;`` is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str                 # one of FLAGS
    options: dict[str, str]


# --- tokens ---------------------------------------------------------------------------

_SPECIAL = ';="\'/'
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_OCTAL = "01234567"


@dataclass(frozen=True)
class _Token:
    kind: str   # "word", "quoted", ";", "=" or "end"
    text: str


def _skip_blank(text: str, pos: int) -> int:
    """The position of the next token: past whitespace and comments."""
    while pos < len(text):
        if text[pos] <= " ":
            pos += 1
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                raise ValueError("JAAS config: unterminated /* comment")
            pos = end + 2
        elif text[pos] == "/":
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end + 1
        else:
            break
    return pos


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """The value of the quoted string opening at ``pos``, and the position after it."""
    start, quote = pos, text[pos]
    out: list[str] = []
    pos += 1
    while pos < len(text) and text[pos] not in "\r\n":
        # Java's tokenizer silently ends an unclosed value at the line's end; we refuse it
        c = text[pos]
        if c == quote:
            return "".join(out), pos + 1
        if c == "\\" and pos + 1 < len(text):
            c, pos = _escape(text, pos + 1)
        else:
            pos += 1
        out.append(c)
    raise ValueError(f"JAAS config: quoted value {text[start:start + 20]!r}... not closed "
                     "on its line")


def _escape(text: str, pos: int) -> tuple[str, int]:
    """The character escaped by the backslash before ``pos``, and the position after it."""
    if text[pos] not in _OCTAL:
        return _ESCAPES.get(text[pos], text[pos]), pos + 1
    digits = 3 if text[pos] in "0123" else 2  # at most \377
    end = pos + 1
    while end < min(pos + digits, len(text)) and text[end] in _OCTAL:
        end += 1
    return chr(int(text[pos:end], 8)), end


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = _skip_blank(text, 0)
    while pos < len(text):
        c = text[pos]
        if c in ";=":
            tokens.append(_Token(c, c))
            pos += 1
        elif c in "\"'":
            value, pos = _quoted(text, pos)
            tokens.append(_Token("quoted", value))
        else:
            end = pos
            while end < len(text) and text[end] > " " and text[end] not in _SPECIAL:
                end += 1
            tokens.append(_Token("word", text[pos:end]))
            pos = end
        pos = _skip_blank(text, pos)
    tokens.append(_Token("end", ""))
    return tokens


# --- the entry ------------------------------------------------------------------------


def _describe(token: _Token) -> str:
    return "the end of the text" if token.kind == "end" else repr(token.text)


def parse_jaas(text: str) -> JaasEntry:
    """The single entry in ``text``; ValueError naming what is wrong otherwise."""
    tokens = _tokens(text)
    if tokens[0].kind != "word":
        raise ValueError(f"JAAS config: expected a login module class, found {_describe(tokens[0])}")
    login_module = tokens[0].text
    if tokens[1].kind != "word":
        raise ValueError(f"JAAS config: login module control flag not specified after {login_module!r}")
    flag = tokens[1].text.lower()
    if flag not in FLAGS:
        raise ValueError(f"JAAS config: invalid login module control flag {tokens[1].text!r}; "
                         f"expected one of {', '.join(FLAGS)}")
    options: dict[str, str] = {}
    i = 2
    while tokens[i].kind not in (";", "end"):
        key = tokens[i]
        if key.kind != "word":
            raise ValueError(f"JAAS config: expected an option name, found {_describe(key)}")
        if tokens[i + 1].kind != "=" or tokens[i + 2].kind not in ("word", "quoted"):
            raise ValueError(f"JAAS config: value not specified for key {key.text!r}")
        options[key.text] = tokens[i + 2].text
        i += 3
    if tokens[i].kind != ";":
        raise ValueError("JAAS config: entry not terminated by ';'")
    if tokens[i + 1].kind != "end":
        raise ValueError(f"JAAS config: only one login module is allowed; found {_describe(tokens[i + 1])} "
                         "after the ';'")
    return JaasEntry(login_module, flag, options)


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """The users PlainLoginModule's server side accepts: option ``user_<name>`` = password."""
    return {key[len("user_"):]: value for key, value in entry.options.items()
            if key.startswith("user_") and len(key) > len("user_")}
