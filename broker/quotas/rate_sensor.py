"""A windowed rate with a quota bound: Kafka's ``Rate`` over a ``SampledStat`` sum, as a
ClientQuotaManager sensor measures it (org.apache.kafka.common.metrics.stats).

Samples. At most ``samples`` (``quota.window.num``, 11) samples, each covering
``window_ms`` (``quota.window.size.seconds`` x 1000) from its start ``start_ms``:

* record(value, now): samples older than ``samples x window_ms`` are reset (start
  now, total 0); the current sample is used while ``now - start < window_ms``, else
  the next slot (in a ring) is reset to start now; the value is added to it;
* rate(now): the same purge, then the sum of all samples divided by the window
  length in seconds, where the window runs from the oldest sample's start to now
  and is at least one sample window (Kafka's ``SimpleRate``), so a new client's
  first bytes are not read as a huge rate.

Why SimpleRate, not Kafka's ``Rate``: ClientQuotaManager's ``Rate`` stretches a young
window to ``samples - 1`` full windows. A new client then passes
``bound x (samples - 1) x window`` (10 s worth) in one burst before its first
throttle, that burst sits in one sample, and when the sample expires 11 s later the
client bursts again: its rate swings with an 11 s period, between 0.74x and 1.27x
the bound over 30 s intervals (simulated: tests/unit/broker/quotas/test_rate_sensor.py).
With the window at least one sample long the first burst is one window's worth, the
bytes spread over the samples, and the rate stays within a few percent of the bound
over any 30 s. ``RateSensor(kafka_rate=True)`` measures as Kafka's ``Rate``.

Quota check (Kafka's Sensor.record with checkQuotas): the value is recorded first,
then the rate is measured; over the bound (``rate > bound``) the caller gets the
throttle time of QuotaUtils.throttleTime: ``(rate - bound) / bound x window_ms`` --
how long the client must stay quiet for its rate over the current window to fall
back to the bound. ``unrecord`` records ``-value`` without a check (a throttled
Fetch's bytes, which the client never got).

Pure and synchronous: time comes in as ``now_ms``; nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _Sample:
    start_ms: int
    total: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms, self.total = now_ms, 0.0


@dataclass(slots=True)
class RateSensor:
    """One quota entity's rate (see the module docstring)."""

    samples: int                  # quota.window.num (>= 2)
    window_ms: int                # quota.window.size.seconds * 1000
    kafka_rate: bool = False      # True: Kafka's Rate window (see the module docstring)
    _ring: list[_Sample] = field(default_factory=list)
    _current: int = 0
    last_record_ms: int = 0       # for expiring idle sensors

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for s in self._ring:
            if now_ms - s.start_ms >= expire_age:
                s.reset(now_ms)

    def _sample_for(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms))
            return self._ring[0]
        current = self._ring[self._current]
        if now_ms - current.start_ms < self.window_ms:
            return current
        self._current = (self._current + 1) % self.samples
        if self._current >= len(self._ring):
            self._ring.append(_Sample(now_ms))
        else:
            self._ring[self._current].reset(now_ms)
        return self._ring[self._current]

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        self._sample_for(now_ms).total += value
        self.last_record_ms = now_ms

    def window_size_ms(self, now_ms: int) -> int:
        """Oldest sample's start to now, at least one window (SimpleRate.windowSize);
        with ``kafka_rate`` at least ``samples - 1`` full windows (Rate.windowSize)."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._ring), default=now_ms)
        elapsed = now_ms - oldest
        if not self.kafka_rate:
            return max(elapsed, self.window_ms)
        full_windows = elapsed // self.window_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return elapsed

    def rate(self, now_ms: int) -> float:
        """Units per second over the window (Rate.measure)."""
        window = self.window_size_ms(now_ms)
        total = sum(s.total for s in self._ring)
        return total / (window / 1000.0)

    def record_and_throttle_ms(self, value: float, bound: float | None, now_ms: int) -> int:
        """Record ``value``; -> 0 within ``bound`` (None: no quota), else the throttle
        time in ms (QuotaUtils.throttleTime, rounded)."""
        self.record(value, now_ms)
        if bound is None:
            return 0
        rate = self.rate(now_ms)
        if rate <= bound:
            return 0
        if bound <= 0:   # a zero quota: nothing is allowed; hold for one full window set
            return self.window_size_ms(now_ms)
        return round((rate - bound) / bound * self.window_size_ms(now_ms))

    def unrecord(self, value: float, now_ms: int) -> None:
        self.record(-value, now_ms)
