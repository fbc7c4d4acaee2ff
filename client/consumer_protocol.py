"""The "consumer" protocol type's metadata and the classic assignors (what a
group member's JoinGroup and the leader's SyncGroup carry), for
``client.group_consumer``.

Layouts (Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment,
big-endian; strings are int16 length + UTF-8, arrays int32 count + items):

    Subscription  int16 version | [string topic] | nullable bytes user_data
                  v1+: | [(string topic, [int32 partition])] owned partitions
                  v2+: | int32 generation_id;  v3+: | nullable string rack_id
    Assignment    int16 version | [(string topic, [int32 partition])]
                  | nullable bytes user_data

We write version 0 of both (every client reads it) and read any version by
taking the leading fields and ignoring the rest. Garbled metadata raises
``ValueError``.

Assignors (Kafka's ``RangeAssignor`` and ``RoundRobinAssignor``; librdkafka
names them the same: "range", "roundrobin"):

* range: per topic, its subscribers sorted by member id and its partitions by
  number; with P partitions and M members, member i gets P // M partitions,
  plus one more for the first P % M, as one contiguous range.
* roundrobin: every subscribed (topic, partition) sorted by topic then
  partition, dealt to the members (sorted by member id) in turn, skipping a
  member that does not subscribe to the partition's topic.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

TP = tuple[str, int]

RANGE, ROUNDROBIN = "range", "roundrobin"
ASSIGNORS = (RANGE, ROUNDROBIN)
JAVA_ASSIGNOR_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": RANGE,
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": ROUNDROBIN,
}


def assignor_name(text: str) -> str:
    """'range', 'roundrobin' or Kafka's class names for them -> the protocol name;
    ValueError naming the value otherwise."""
    name = JAVA_ASSIGNOR_NAMES.get(text.strip(), text.strip().lower())
    if name not in ASSIGNORS:
        raise ValueError(f"unsupported assignment strategy {text!r}: use range or roundrobin "
                         "(or org.apache.kafka.clients.consumer.RangeAssignor / "
                         "RoundRobinAssignor)")
    return name


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _partitions_blob(parts: Mapping[str, list[int]]) -> bytes:
    out = bytearray(struct.pack(">i", len(parts)))
    for topic, ps in parts.items():
        out += _string(topic) + struct.pack(f">i{len(ps)}i", len(ps), *ps)
    return bytes(out)


def encode_subscription(topics: list[str]) -> bytes:
    out = bytearray(struct.pack(">hi", 0, len(topics)))
    for t in topics:
        out += _string(t)
    return bytes(out + struct.pack(">i", -1))


def encode_assignment(tps: list[TP]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        by_topic.setdefault(t, []).append(p)
    return struct.pack(">h", 0) + _partitions_blob(by_topic) + struct.pack(">i", -1)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        try:
            values = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise ValueError("consumer protocol metadata is truncated") from None
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str:
        (n,) = self.unpack(">h")
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("consumer protocol metadata has a bad string length")
        text = self.data[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return text

    def count(self) -> int:
        (n,) = self.unpack(">i")
        if n < 0 or n > len(self.data):
            raise ValueError("consumer protocol metadata has a bad array length")
        return n


def decode_subscription(data: bytes) -> list[str]:
    """-> the subscribed topics (any version)."""
    r = _Reader(data)
    r.unpack(">h")
    return [r.string() for _ in range(r.count())]


def decode_assignment(data: bytes) -> list[TP]:
    """-> the assigned (topic, partition)s (any version); empty bytes -> []."""
    if not data:
        return []
    r = _Reader(data)
    r.unpack(">h")
    out: list[TP] = []
    for _ in range(r.count()):
        topic = r.string()
        n = r.count()
        out.extend((topic, p) for p in r.unpack(f">{n}i"))
    return out


def assign(strategy: str, subscriptions: Mapping[str, list[str]],
           partitions: Mapping[str, int]) -> dict[str, list[TP]]:
    """member id -> its (topic, partition)s; ``subscriptions`` member -> topics,
    ``partitions`` topic -> partition count (topics missing there are skipped)."""
    members = sorted(subscriptions)
    out: dict[str, list[TP]] = {m: [] for m in members}
    if strategy == RANGE:
        for topic in sorted({t for ts in subscriptions.values() for t in ts}):
            subs = [m for m in members if topic in subscriptions[m]]
            count = partitions.get(topic, 0)
            if not subs or count <= 0:
                continue
            each, extra = divmod(count, len(subs))
            start = 0
            for i, m in enumerate(subs):
                n = each + (1 if i < extra else 0)
                out[m].extend((topic, p) for p in range(start, start + n))
                start += n
        return out
    if strategy != ROUNDROBIN:
        raise ValueError(f"unknown assignor {strategy!r}")
    every = sorted((t, p) for t in {t for ts in subscriptions.values() for t in ts}
                   for p in range(partitions.get(t, 0)))
    turn = 0
    for topic, p in every:
        for _ in range(len(members)):
            m = members[turn % len(members)]
            turn += 1
            if topic in subscriptions[m]:
                out[m].append((topic, p))
                break
    return out
