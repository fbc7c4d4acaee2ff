"""What the performance and verifiable tools share: client properties (a
``--producer.config`` / ``--consumer.config`` file plus properties given on
the command line, later ones winning, as Kafka's tools merge them), the
producer settings read from them, the wait for a topic's leaders, and
Kafka's ThroughputThrottler.

Producer keys read (Kafka's names and defaults): ``bootstrap.servers``,
``acks`` (all), ``batch.size`` (16384), ``compression.type`` (none),
``max.in.flight.requests.per.connection`` (5), ``retries`` (2 here: our
producer has no delivery timeout to bound them), ``request.timeout.ms``
(30000), ``client.id``; ``security.protocol``, ``ssl.*`` and ``sasl.*`` go to
``client.security``. Other keys are accepted and ignored. A bad value is a
``ToolError`` naming the key and the value.

Throttling (Kafka's ThroughputThrottler): with a target of T records/s > 0,
before record i is sent the sender sleeps until i / T seconds have passed
since the start; T < 0 means no limit.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from client import ClusterMetadata, KafkaAdmin
from client.security import ClientSecurity, load_client_properties
from tools import ToolError
from protocol import compression
from protocol.errors import ErrorCode

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
METADATA_ATTEMPTS = 20


def load_props(path: str | None, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The file's properties (none without a file) with ``overrides`` on top."""
    props: dict[str, str] = {}
    if path:
        try:
            props = load_client_properties(path)
        except OSError as e:
            raise ToolError(f"config file {path}: {e.strerror}") from None
    props.update(overrides or {})
    return props


def int_prop(props: dict[str, str], key: str, default: int, minimum: int = 0) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ToolError(f"Invalid value {text} for configuration {key}: "
                        "not a number") from None
    if value < minimum:
        raise ToolError(f"Invalid value {text} for configuration {key}: at least {minimum}")
    return value


def security_of(props: dict[str, str]) -> ClientSecurity:
    try:
        return ClientSecurity.from_config(props)
    except ValueError as e:
        raise ToolError(str(e)) from None


@dataclass(frozen=True)
class ProducerSettings:
    servers: str
    acks: int
    batch_size: int
    codec: int
    max_in_flight: int
    retries: int
    timeout_ms: int
    client_id: str
    security: ClientSecurity


def producer_settings(props: dict[str, str], default_client_id: str) -> ProducerSettings:
    servers = props.get("bootstrap.servers", "").strip()
    if not servers:
        raise ToolError("bootstrap.servers is required: give --bootstrap-server, "
                        "--producer-props bootstrap.servers=HOST:PORT or a config file")
    acks_text = props.get("acks", "all").strip().lower()
    if acks_text not in ACKS:
        raise ToolError(f"Invalid value {acks_text} for configuration acks: "
                        "String must be one of: all, -1, 0, 1")
    codec_text = props.get("compression.type", "none").strip().lower()
    if codec_text not in CODECS:
        raise ToolError(f"Invalid value {codec_text} for configuration compression.type: "
                        f"String must be one of: {', '.join(CODECS)}")
    if not compression.available(CODECS[codec_text]):
        raise ToolError(str(compression.CompressionUnavailable(
            compression.Codec(CODECS[codec_text]))))
    return ProducerSettings(
        servers, ACKS[acks_text], int_prop(props, "batch.size", 16384, 1), CODECS[codec_text],
        int_prop(props, "max.in.flight.requests.per.connection", 5, 1),
        int_prop(props, "retries", 2), int_prop(props, "request.timeout.ms", 30000, 1),
        props.get("client.id", default_client_id), security_of(props))


async def partitions_of(admin: KafkaAdmin, topic: str, *,
                        auto_create: bool = True) -> ClusterMetadata:
    """Metadata until every partition of ``topic`` has a leader (asking the broker
    to create it where it auto-creates topics, as a producer's Metadata does)."""
    for attempt in range(METADATA_ATTEMPTS):
        cluster = await admin.metadata([topic], allow_auto_create=auto_create)
        t = cluster.topics.get(topic)
        if t is not None and t.error == ErrorCode.NONE and t.partitions and all(
                cluster.leader(topic, p) for p in t.partitions):
            return cluster
        if t is not None and t.error not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE,
                                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            err = ErrorCode.from_code(t.error)
            raise ToolError(f"topic {topic}: {err.name}: {err.message}")
        await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
    raise ToolError(f"topic {topic} has no leader for every partition "
                    "(does it exist? is auto.create.topics.enable off?)")


class Throttler:
    """Kafka's ThroughputThrottler, in seconds: ``delay(i)`` is how long to wait
    before sending record i (0 when on or behind schedule, or unlimited)."""

    def __init__(self, per_second: float, start: float | None = None) -> None:
        self.per_second = per_second
        self.start = time.monotonic() if start is None else start

    def delay(self, sent: int, now: float | None = None) -> float:
        if self.per_second <= 0:
            return 0.0
        due = self.start + sent / self.per_second
        return max(0.0, due - (time.monotonic() if now is None else now))
