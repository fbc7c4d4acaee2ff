"""Kafka's topic name rules (org.apache.kafka.common.internals.Topic).

A legal name is 1..249 characters of ASCII letters, digits, '.', '_' and '-',
and is neither "." nor "..". 249 = 255 (a file name) minus room for the
"-<partition>" suffix of a partition directory (and Kafka's ".deleted"/
"-delete" markers).

'.' and '_' collide: metric names replace '.' with '_', so "a.b" and "a_b"
would share metrics. Kafka lets either be created but refuses the second
while the first exists, and warns on creating a name with either character.
"""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"   # KRaft's; creating it is refused
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})


class InvalidTopicName(ValueError):
    """The name breaks a rule; the message says which (INVALID_TOPIC_EXCEPTION)."""


def validate(name: str | None) -> None:
    """Raise InvalidTopicName unless ``name`` is a legal topic name."""
    if not name:
        raise InvalidTopicName("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicName('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicName(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}")
    if not _LEGAL.match(name):
        raise InvalidTopicName(
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'")


def is_valid(name: str | None) -> bool:
    try:
        validate(name)
    except InvalidTopicName:
        return False
    return True


def is_internal(name: str | None) -> bool:
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def has_collision(a: str, b: str) -> bool:
    """True when two distinct names map to the same metric name."""
    return a != b and unify_collision_chars(a) == unify_collision_chars(b)


def colliding(name: str, existing: list[str] | set[str]) -> list[str]:
    """The existing topics ``name`` collides with (sorted)."""
    if not has_collision_chars(name):
        return []
    return sorted(t for t in existing if has_collision(name, t))
