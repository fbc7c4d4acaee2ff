"""Options of the ``pybroker`` source, as Spark's Kafka source reads them.

Offsets JSON (Spark's ``KafkaSourceOffset`` form, also what the streaming
checkpoint stores)::

    {"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}

topic -> partition (a string, JSON keys are strings) -> offset; in options -2
means earliest and -1 latest. Timestamps JSON (``startingOffsetsByTimestamp``,
``endingOffsetsByTimestamp``) has the same shape with milliseconds since the
epoch. ``assign`` is ``{"topicA": [0, 1], "topicB": [2]}``.

Precedence, as Spark documents it: ``startingTimestamp`` over
``startingOffsetsByTimestamp`` over ``startingOffsets`` (and the same for the
ending options). A JSON of specific offsets or timestamps must name every
partition the query reads; a timestamp with no record at or after it resolves
by ``startingOffsetsByTimestampStrategy`` (``error``, the default, or
``latest``) for starting offsets and to latest for ending offsets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_jobs.kafka_io import KafkaIO
from spark_jobs.kafka_requests import EARLIEST, LATEST, TP, ClientConfig

# Kafka consumer settings Spark's source refuses because it manages them itself.
UNSUPPORTED_KAFKA = ("auto.offset.reset", "key.deserializer",
                     "value.deserializer", "enable.auto.commit", "interceptor.classes")


@dataclass(frozen=True)
class Subscription:
    """Exactly one of subscribe / subscribePattern / assign."""

    kind: str                                  # "subscribe" | "subscribePattern" | "assign"
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TP, ...] = ()

    def partitions(self, io: KafkaIO) -> list[TP]:
        """The topic-partitions the query reads now, sorted."""
        if self.kind == "assign":
            # Partitions that stopped existing are left out, so that the
            # planner reports them gone (failOnDataLoss) instead of failing.
            exist = io.partitions(sorted({t for t, _p in self.assigned}))
            return sorted(tp for tp in self.assigned if tp[1] in exist.get(tp[0], ()))
        if self.kind == "subscribe":
            found = io.partitions(list(self.topics))
        else:
            rx = re.compile(self.pattern or "")
            found = {t: ps for t, ps in io.all_topics().items() if rx.fullmatch(t)}
        return sorted((t, p) for t, ps in found.items() for p in ps)


@dataclass(frozen=True)
class Bound:
    """A starting or ending point: earliest, latest, offsets or timestamps."""

    kind: str                                  # "earliest" | "latest" | "offsets" | "timestamps" | "timestamp"
    offsets: tuple[tuple[TP, int], ...] = ()   # for "offsets" / "timestamps"
    timestamp: int = -1                        # for "timestamp" (all partitions)


@dataclass(frozen=True)
class SourceOptions:
    client: ClientConfig
    subscription: Subscription
    starting: Bound
    ending: Bound
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    timestamp_strategy: str = "error"          # startingOffsetsByTimestampStrategy
    poll_timeout_s: float | None = None        # kafkaConsumer.pollTimeoutMs


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    text = opts.get(key.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise ValueError(f"option {key} must be true or false, not {text!r}")
    return text.strip().lower() == "true"


def _positive(opts: dict[str, str], key: str) -> int | None:
    text = opts.get(key.lower())
    if text is None:
        return None
    value = int(text)
    if value <= 0:
        raise ValueError(f"option {key} must be positive, not {value}")
    return value


def parse_subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise ValueError("One of the following options must be specified for Kafka source: "
                         "subscribe, subscribePattern, assign. See the docs for more details.")
    kind = given[0]
    value = opts[kind].strip()
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option "
                             f"'subscribe' is '{value}'")
        return Subscription("subscribe", topics=topics)
    if kind == "subscribepattern":
        if not value:
            raise ValueError("Pattern to subscribe is empty as specified value for option "
                             "'subscribePattern' is ''")
        re.compile(value)
        return Subscription("subscribePattern", pattern=value)
    try:
        parsed = json.loads(value)
        assigned = tuple(sorted((str(t), int(p)) for t, ps in parsed.items() for p in ps))
    except (ValueError, AttributeError, TypeError) as e:
        raise ValueError(f"Expected e.g. {{\"topicA\":[0,1],\"topicB\":[0,1]}}, got {value}"
                         ) from e
    if not assigned:
        raise ValueError(f"No topicpartitions to assign as specified value for option "
                         f"'assign' is '{value}'")
    return Subscription("assign", assigned=assigned)


def parse_offsets_json(text: str, what: str) -> dict[TP, int]:
    """``{"t": {"0": 23}}`` -> {("t", 0): 23}."""
    try:
        parsed = json.loads(text)
        return {(str(t), int(p)): int(o) for t, parts in parsed.items()
                for p, o in parts.items()}
    except (ValueError, AttributeError, TypeError) as e:
        raise ValueError(f"Expected e.g. {{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":"
                         f"{{\"0\":-2}}}} for {what}, got {text}") from e


def offsets_json(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """{("t", 0): 23} -> {"t": {"0": 23}}, topics and partitions sorted."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def from_offsets_json(data: Mapping[str, Any]) -> dict[TP, int]:
    return {(t, int(p)): int(o) for t, parts in data.items() for p, o in parts.items()}


def _bound(opts: dict[str, str], prefix: str, default: str) -> Bound:
    """``starting`` / ``ending`` options by Spark's precedence."""
    ts = opts.get(f"{prefix}timestamp")
    if ts is not None:
        return Bound("timestamp", timestamp=int(ts))
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return Bound("timestamps", offsets=tuple(sorted(
            parse_offsets_json(by_ts, f"{prefix}OffsetsByTimestamp").items())))
    text = opts.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return Bound(text.lower())
    return Bound("offsets", offsets=tuple(sorted(
        parse_offsets_json(text, f"{prefix}Offsets").items())))


def parse(options: Mapping[str, str], *, batch: bool) -> SourceOptions:
    """Validate and parse the read options (``batch`` for a batch query)."""
    opts = _lower(options)
    for key in UNSUPPORTED_KAFKA:
        if f"kafka.{key}" in opts:
            raise ValueError(f"Kafka option '{key}' is not supported as it is managed by "
                             "the source")
    starting = _bound(opts, "starting", "earliest" if batch else "latest")
    ending = _bound(opts, "ending", "latest")
    if batch:
        if starting.kind == "latest" or (starting.kind == "offsets" and any(
                o == LATEST for _tp, o in starting.offsets)):
            raise ValueError("starting offset can't be latest for batch queries on Kafka")
        if ending.kind == "earliest" or (ending.kind == "offsets" and any(
                o == EARLIEST for _tp, o in ending.offsets)):
            raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    elif any(k in opts for k in ("endingoffsets", "endingtimestamp",
                                  "endingoffsetsbytimestamp")):
        raise ValueError("Ending offset not valid in streaming queries")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ValueError("startingOffsetsByTimestampStrategy must be error or latest")
    poll = opts.get("kafkaconsumer.polltimeoutms")
    return SourceOptions(
        client=ClientConfig.from_kafka_options(options),
        subscription=parse_subscription(opts),
        starting=starting, ending=ending,
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_headers=_bool(opts, "includeHeaders", False),
        max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
        min_partitions=_positive(opts, "minPartitions"),
        max_records_per_partition=_positive(opts, "maxRecordsPerPartition"),
        timestamp_strategy=strategy,
        poll_timeout_s=int(poll) / 1000 if poll else None)


# -- resolving bounds to offsets ---------------------------------------------------------

def resolve(io: KafkaIO, bound: Bound, tps: list[TP], *, starting: bool,
            strategy: str = "error") -> dict[TP, int]:
    """Concrete offsets for ``tps`` at ``bound`` (asks the broker as needed)."""
    if not tps:
        return {}
    if bound.kind == "earliest":
        return io.earliest(tps)
    if bound.kind == "latest":
        return io.latest(tps)
    given = dict(bound.offsets)
    if bound.kind in ("offsets", "timestamps"):
        if set(given) != set(tps):
            name = "Offsets" if bound.kind == "offsets" else "OffsetsByTimestamp"
            which = "starting" if starting else "ending"
            raise ValueError(f"If {which}{name} contains specific offsets, you must specify "
                             f"all TopicPartitions. Use -1 for latest, -2 for earliest. "
                             f"Specified: {sorted(given)} Assigned: {sorted(tps)}")
    if bound.kind == "offsets":
        specials = {tp: o for tp, o in given.items() if o in (EARLIEST, LATEST)}
        resolved = io.list_offsets(specials)
        return {tp: resolved.get(tp, o) for tp, o in given.items()}
    stamps = given if bound.kind == "timestamps" else {tp: bound.timestamp for tp in tps}
    found = io.list_offsets(stamps)
    missing = [tp for tp, o in found.items() if o < 0]
    if missing:
        if starting and strategy == "error":
            raise ValueError(f"No offset matched the timestamp for {missing} (no record at or "
                             f"after the given timestamp); set "
                             f"startingOffsetsByTimestampStrategy to 'latest' to start there")
        found.update(io.latest(missing))
    return found
