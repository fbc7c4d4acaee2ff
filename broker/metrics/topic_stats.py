"""Per-topic traffic counters (Kafka's BrokerTopicStats), kept as plain ints.

The produce and fetch paths hold a ``BrokerTopicStats`` and, per partition of a
request, add to the ``TopicCounters`` of its topic: one dict lookup and a few
integer adds, nothing else on the hot path. The broker-wide series (Kafka's
``BrokerTopicMetrics`` without a topic) are the per-topic sums, computed at
scrape time; a topic whose counters are dropped (``remove_topic``, topic
deletion) first adds them to ``retired`` so those sums never go down.

What is counted (as Kafka 3.9):

* messages_in / bytes_in: records and bytes appended as leader by Produce (and
  by the coordinators' own writes); followers' appends are not counted, so the
  sum over brokers is what producers sent (duplicates of idempotent retries are
  not counted).
* bytes_out: bytes of records sent to consumers by Fetch (followers' fetches
  are replication, counted in replication_bytes_out).
* failed_produce: partitions whose append failed, except (as Kafka) for unknown
  partition, not leader, too large, corrupt and storage errors; failed_fetch:
  fetched partitions answered with an error; total_produce / total_fetch:
  partitions appended to or tried / answered.
* bytes_rejected: bytes of produce data refused as too large.
"""

from __future__ import annotations

FIELDS = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "failed_produce",
          "failed_fetch", "total_produce", "total_fetch", "replication_bytes_in",
          "replication_bytes_out")


class TopicCounters:
    __slots__ = FIELDS
    # one int per name of FIELDS (set to 0 by __init__)
    messages_in: int
    bytes_in: int
    bytes_out: int
    bytes_rejected: int
    failed_produce: int
    failed_fetch: int
    total_produce: int
    total_fetch: int
    replication_bytes_in: int
    replication_bytes_out: int

    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, 0)

    def add(self, other: TopicCounters) -> None:
        for name in FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class BrokerTopicStats:
    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.retired = TopicCounters()

    def of(self, topic: str) -> TopicCounters:
        """The topic's counters, made on first use."""
        c = self.topics.get(topic)
        if c is None:
            c = self.topics[topic] = TopicCounters()
        return c

    def remove_topic(self, topic: str) -> None:
        c = self.topics.pop(topic, None)
        if c is not None:
            self.retired.add(c)

    def totals(self) -> TopicCounters:
        total = TopicCounters()
        total.add(self.retired)
        for c in list(self.topics.values()):
            total.add(c)
        return total
