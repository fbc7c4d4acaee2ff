"""Broker-side regular-expression subscriptions (KIP-848's SubscribedTopicRegex).

A member of ConsumerGroupHeartbeat v1+ may subscribe with a regex instead of
topic names; the coordinator resolves it to the topics whose whole name
matches and keeps the result per group and regex (a RegexResolution record,
Kafka's ConsumerGroupRegularExpressionValue: the topics, the metadata version
it was resolved against, when). Members sharing a regex share one
resolution.

Kafka resolves with RE2/J (linear time, no backreferences); we use Python's
``re`` with ``fullmatch`` — the same answer for the patterns clients send
(``^orders-.*``, ``topic-[0-9]+``); constructs RE2 refuses but ``re`` knows
(lookarounds, backreferences) are accepted here. An invalid pattern is refused
at the heartbeat with INVALID_REGULAR_EXPRESSION.

Resolution is re-run when the topic metadata version moved on since the
regex was last resolved (topics created or deleted), by refresh_metadata.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from coordinator.group.consumer.model import ResolvedRegex


class InvalidRegex(ValueError):
    """The pattern does not compile; the message says why."""


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> re.Pattern[str]:
    """The compiled pattern, or InvalidRegex with Kafka's message shape."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidRegex(
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.") \
            from None
    except RecursionError:
        raise InvalidRegex(
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: too deep.") \
            from None


def validate(pattern: str) -> None:
    compile_regex(pattern)


def resolve(pattern: str, topic_names: Iterable[str], version: int,
            now_ms: int) -> ResolvedRegex:
    """The topics whose whole name matches ``pattern`` (must be valid)."""
    compiled = compile_regex(pattern)
    matched = frozenset(name for name in topic_names if compiled.fullmatch(name))
    return ResolvedRegex(topics=matched, version=version, timestamp_ms=now_ms)
