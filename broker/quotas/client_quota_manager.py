"""Per-entity client quotas and throttle times, as Kafka 3.9's ClientQuotaManager with
its DefaultQuotaCallback (ZooKeeper mode).

Entities. A quota is set on a user, a client id, or a (user, client id) pair, each
part either a name or the type's default. ``QuotaEntity(user, client_id)`` holds the
parts as ZooKeeper names them: the sanitized name (broker.security.scram_credentials
.sanitize), ``DEFAULT`` ("<default>", which no sanitized name can be), or None when
the entity has no such part.

One ``ClientQuotaManager`` per quota type (produce bytes, fetch bytes, request
percentage), each with its own overrides and sensors, so the precedence below runs
per type: a user with only a produce quota and a client id with only a fetch quota
are throttled on each by that one.

Precedence (KIP-55), for a request by user U with client id C -- the first entity that
has a quota of this type wins:

    1. /config/users/U/clients/C            5. /config/users/<default>/clients/<default>
    2. /config/users/U/clients/<default>    6. /config/users/<default>
    3. /config/users/U                      7. /config/clients/C
    4. /config/users/<default>/clients/C    8. /config/clients/<default>

Sharing. The entity that wins also decides who shares a rate (Kafka's metric tags):
(U, C) for 1, 2, 4 and 5; (U, "") for 3 and 6 -- all of U's client ids share one
rate; ("", C) for 7 and 8 -- every user of client id C shares it. When only one kind
of entity has quotas at all (only client ids, only users, only pairs) the tags are
fixed without the walk, as Kafka's quotaTypesEnabled shortcut. A quota changed later
re-resolves on the next request; a sensor keeps its samples (rates are not reset).

Throttle times are the sensor's (rate_sensor.py): the bytes or time are recorded,
then ``(rate - bound) / bound x window``; the request-percentage manager bounds
its throttle by one window (ClientRequestQuotaManager.maxThrottleTimeMs). A User
principal's name is its quota user ("User:alice" -> alice); a connection without
one (PLAINTEXT, or before SASL completes) is ANONYMOUS, as Kafka's
KafkaPrincipal.ANONYMOUS -- so /config/users/ANONYMOUS and /config/users/<default>
apply to unauthenticated clients. Sensors idle for an hour are dropped
(Kafka's inactive sensor expiry).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from broker.quotas.rate_sensor import RateSensor
from broker.security.scram_credentials import sanitize

DEFAULT = "<default>"                     # ZooKeeperInternals.DEFAULT_STRING
ANONYMOUS_USER = "ANONYMOUS"
SENSOR_EXPIRY_MS = 3_600_000              # Kafka's InactiveSensorExpirationTimeSeconds
SENSOR_EXPIRY_CHECK_MS = 30_000           # how often idle sensors are looked for (Kafka's
                                          # ExpireSensorTask period)
NANOS_PER_PERCENT_SECOND = 10_000_000     # 1% of one second, in ns


class QuotaType(enum.Enum):
    """A quota type and the config key that sets it."""

    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"


@dataclass(frozen=True)
class QuotaEntity:
    """A quota entity in ZooKeeper's names (see the module docstring)."""

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity needs a user or a client id")

    @property
    def path(self) -> str:
        """The entity path under /config: users/U, clients/C or users/U/clients/C."""
        if self.user is None:
            return f"clients/{self.client_id}"
        if self.client_id is None:
            return f"users/{self.user}"
        return f"users/{self.user}/clients/{self.client_id}"


Tags = tuple[str, str]          # (sanitized user or "", client id or ""): who shares a rate

# quotaTypesEnabled bits
_CLIENT_ID_QUOTAS, _USER_QUOTAS, _USER_CLIENT_QUOTAS = 1, 2, 4


def quota_user(principal: str | None) -> str:
    """The quota user of a connection's principal: its name, ANONYMOUS when none."""
    if not principal:
        return ANONYMOUS_USER
    _, _, name = principal.partition(":")
    return name or ANONYMOUS_USER


class ClientQuotaManager:
    """The quotas of one type: overrides per entity, rates per sharing group."""

    def __init__(self, quota_type: QuotaType, samples: int, window_seconds: int,
                 max_throttle_ms: int | None = None, kafka_rate: bool = False) -> None:
        self.quota_type = quota_type
        self.kafka_rate = kafka_rate    # rate_sensor.py: Kafka's Rate window, not SimpleRate
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self.max_throttle_ms = max_throttle_ms
        self.overrides: dict[QuotaEntity, float] = {}
        self._kinds = 0
        self._sensors: dict[Tags, RateSensor] = {}
        self._next_expiry_check_ms = 0

    # -- configuration ------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return bool(self.overrides)

    def update_quota(self, entity: QuotaEntity, bound: float | None) -> None:
        """Set (or with None remove) ``entity``'s quota of this type."""
        if bound is None:
            self.overrides.pop(entity, None)
        else:
            self.overrides[entity] = bound
        self._kinds = 0
        for e in self.overrides:
            self._kinds |= (_CLIENT_ID_QUOTAS if e.user is None else
                            _USER_QUOTAS if e.client_id is None else _USER_CLIENT_QUOTAS)

    # -- resolution (DefaultQuotaCallback.quotaMetricTags / quotaLimit) ---------------------

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """Who shares the rate of a request by ``user`` (sanitized) with ``client_id``."""
        kinds = self._kinds
        if kinds in (0, _CLIENT_ID_QUOTAS):
            return "", client_id
        if kinds == _USER_QUOTAS:
            return user, ""
        if kinds == _USER_CLIENT_QUOTAS:
            return user, client_id
        has = self.overrides.__contains__
        if (has(QuotaEntity(user, client_id)) or has(QuotaEntity(user, DEFAULT))):
            return user, client_id                                    # 1, 2
        if has(QuotaEntity(user, None)):
            return user, ""                                           # 3
        if has(QuotaEntity(DEFAULT, client_id)) or has(QuotaEntity(DEFAULT, DEFAULT)):
            return user, client_id                                    # 4, 5
        if has(QuotaEntity(DEFAULT, None)):
            return user, ""                                           # 6
        return "", client_id                                          # 7, 8

    def quota_limit(self, tags: Tags) -> float | None:
        """The bound for a sharing group; None when no entity sets one."""
        user, client_id = tags
        get = self.overrides.get
        if user and client_id:
            candidates: Iterable[QuotaEntity] = (
                QuotaEntity(user, client_id), QuotaEntity(user, DEFAULT),
                QuotaEntity(DEFAULT, client_id), QuotaEntity(DEFAULT, DEFAULT))
        elif user:
            candidates = (QuotaEntity(user, None), QuotaEntity(DEFAULT, None))
        elif client_id:
            candidates = (QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT))
        else:
            return None
        for entity in candidates:
            bound = get(entity)
            if bound is not None:
                return bound
        return None

    def quota_for(self, principal: str | None, client_id: str) -> float | None:
        """The bound that applies to a client (None: unlimited)."""
        return self.quota_limit(self._tags(principal, client_id))

    def _tags(self, principal: str | None, client_id: str) -> Tags:
        return self.metric_tags(sanitize(quota_user(principal)), sanitize(client_id))

    # -- recording -----------------------------------------------------------------------

    def _sensor(self, tags: Tags, now_ms: int) -> RateSensor:
        sensor = self._sensors.get(tags)
        if sensor is None:
            # The scan over every sensor runs at most once per SENSOR_EXPIRY_CHECK_MS:
            # run per new sensor it made a stream of new client ids quadratic.
            if len(self._sensors) > 64 and now_ms >= self._next_expiry_check_ms:
                self._next_expiry_check_ms = now_ms + SENSOR_EXPIRY_CHECK_MS
                self.expire_sensors(now_ms)
            sensor = self._sensors[tags] = RateSensor(self.samples, self.window_ms,
                                                        self.kafka_rate)
        return sensor

    def record_and_throttle_ms(self, principal: str | None, client_id: str, value: float,
                               now_ms: int) -> int:
        """Record ``value`` for the client; -> the throttle time (0 when within quota
        or unlimited)."""
        tags = self._tags(principal, client_id)
        bound = self.quota_limit(tags)
        throttle = self._sensor(tags, now_ms).record_and_throttle_ms(value, bound, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return throttle

    def unrecord(self, principal: str | None, client_id: str, value: float, now_ms: int) -> None:
        self._sensor(self._tags(principal, client_id), now_ms).unrecord(value, now_ms)

    def max_value_in_window(self, principal: str | None, client_id: str) -> float | None:
        """The most one response may carry: a Fetch never asks for more; None without
        a quota. Kafka's getMaxValueInQuotaWindow is bound x (samples - 1) x window,
        what its stretched Rate lets through at once; with SimpleRate's window
        (rate_sensor.py) that is bound x one window -- more would always be over."""
        bound = self.quota_for(principal, client_id)
        if bound is None:
            return None
        windows = self.samples - 1 if self.kafka_rate else 1
        return bound * windows * self.window_ms / 1000

    def rate(self, principal: str | None, client_id: str, now_ms: int) -> float:
        """The client's current rate (for tests and logs)."""
        sensor = self._sensors.get(self._tags(principal, client_id))
        return 0.0 if sensor is None else sensor.rate(now_ms)

    def expire_sensors(self, now_ms: int) -> int:
        """Drop sensors idle for SENSOR_EXPIRY_MS -> how many."""
        idle = [t for t, s in self._sensors.items()
                if now_ms - s.last_record_ms >= SENSOR_EXPIRY_MS]
        for t in idle:
            del self._sensors[t]
        return len(idle)


def handler_time_as_percentage(busy_ns: int) -> float:
    """ClientRequestQuotaManager.nanosToPercentage: time on the event loop, recorded so
    that the rate per second is a percentage of the loop (100 = all of it)."""
    return busy_ns / NANOS_PER_PERCENT_SECOND
