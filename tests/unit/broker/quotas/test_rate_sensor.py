"""broker/quotas/rate_sensor.py: the windowed rate (samples, the window, purging), the
throttle time formula, and why the window is SimpleRate's: a client that sends
whenever it may is held within 10% of the bound over every 30 s interval."""

from __future__ import annotations

import bisect

import pytest

from broker.quotas.rate_sensor import RateSensor


def sensor(kafka_rate: bool = False) -> RateSensor:
    return RateSensor(samples=11, window_ms=1000, kafka_rate=kafka_rate)


def test_the_window_is_at_least_one_sample() -> None:
    s = sensor()
    s.record(1000, 0)
    assert s.window_size_ms(0) == 1000
    assert s.rate(0) == pytest.approx(1000.0)
    assert s.window_size_ms(2500) == 2500


def test_kafkas_rate_stretches_a_young_window_to_samples_minus_one() -> None:
    s = sensor(kafka_rate=True)
    s.record(10_000, 0)
    assert s.window_size_ms(0) == 10_000
    assert s.window_size_ms(2500) == 10_500          # 2 full windows + 500 ms, stretched by 8
    assert s.window_size_ms(10_500) == 10_500


def test_samples_roll_and_expire_after_samples_times_window() -> None:
    s = sensor()
    for t in range(0, 11_000, 1000):                # one sample per second, 11 samples
        s.record(100, t)
    assert s.rate(10_999) == pytest.approx(1100 / 10.999)
    s.record(0, 11_000)                             # the t=0 sample expired, reused
    assert s.rate(11_000) == pytest.approx(1000 / 10.0)
    assert s.rate(40_000) == 0.0                    # everything purged


def test_throttle_time_is_kafkas_formula() -> None:
    s = sensor()
    assert s.record_and_throttle_ms(500, 1000.0, 0) == 0            # 500/s within 1000/s
    # 2000 in a 1 s window = 2000/s: (2000 - 1000) / 1000 * 1 s = 1 s
    assert s.record_and_throttle_ms(1500, 1000.0, 0) == 1000
    assert s.record_and_throttle_ms(1, None, 0) == 0                # no quota, still recorded


def test_unrecord_takes_the_bytes_back() -> None:
    s = sensor()
    s.record_and_throttle_ms(20_000, 1000.0, 0)
    s.unrecord(20_000, 0)
    assert s.rate(0) == 0.0
    assert s.record_and_throttle_ms(900, 1000.0, 0) == 0


def rates_over_30s(kafka_rate: bool, chunk: int) -> list[float]:
    """A client sending ``chunk`` bytes whenever it is not throttled, quota 1 MB/s:
    its rate over each 30 s interval starting in the first minute."""
    s, bound, now, sent = sensor(kafka_rate), 1_000_000.0, 0, 0
    times, totals = [], []
    while now < 100_000:
        sent += chunk
        times.append(now)
        totals.append(sent)
        now += max(1, s.record_and_throttle_ms(chunk, bound, now))

    def sent_by(t: int) -> int:
        i = bisect.bisect_right(times, t) - 1
        return totals[i] if i >= 0 else 0
    return [(sent_by(a + 30_000) - sent_by(a)) / 30 / bound for a in range(-1, 60_000, 500)]


@pytest.mark.parametrize("chunk", [16 * 1024, 256 * 1024, 1_000_000])
def test_held_within_ten_percent_over_any_30s(chunk: int) -> None:
    rates = rates_over_30s(False, chunk)
    assert 0.9 <= min(rates) and max(rates) <= 1.1, (min(rates), max(rates))


def test_kafkas_rate_swings_past_ten_percent() -> None:
    """The reason for SimpleRate (module docstring)."""
    rates = rates_over_30s(True, 256 * 1024)
    assert min(rates) < 0.9 and max(rates) > 1.1
