"""Kafka's default partitioner: murmur2 of the key for keyed records, sticky
partitions for records without a key.

``murmur2`` is the 32-bit MurmurHash2 variant Kafka's Java client uses
(``Utils.murmur2``): seed 0x9747b28c, little-endian 4-byte blocks, the result
as a signed 32-bit int. A keyed record goes to ``to_positive(murmur2(key)) %
partitions`` (``to_positive`` clears the sign bit, as ``Utils.toPositive``), so
a key lands on the same partition as with every stock Java/librdkafka
"murmur2_random" producer.
"""

from __future__ import annotations

import random
import struct

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK
    blocks = length // 4
    for k in struct.unpack_from(f"<{blocks}I", data):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = blocks * 4
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: the hash with its sign bit cleared."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    return to_positive(murmur2(key)) % partitions


class StickyPartitioner:
    """Default partitioning for a producer: keyed records by murmur2; records
    without a key stick to one partition until ``new_batch`` is called (KIP-480),
    which then picks another at random among those with a leader."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, partitions: int,
                  available: list[int] | None = None) -> int:
        if key is not None:
            return partition_for_key(key, partitions)
        current = self._sticky.get(topic)
        if current is None or current >= partitions:
            current = self._pick(partitions, available, None)
            self._sticky[topic] = current
        return current

    def new_batch(self, topic: str, partitions: int, available: list[int] | None = None) -> None:
        """The sticky partition's batch was sent: move to another partition."""
        self._sticky[topic] = self._pick(partitions, available, self._sticky.get(topic))

    def _pick(self, partitions: int, available: list[int] | None, previous: int | None) -> int:
        choices = available if available else list(range(partitions))
        if len(choices) > 1 and previous is not None:
            choices = [p for p in choices if p != previous]
        return self._rng.choice(choices)
