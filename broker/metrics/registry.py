"""The metric registry: counters, gauges (set, or computed by a callback at scrape
time), histograms with fixed buckets, each with optional labels, and collectors
(functions that build whole families at scrape time).

Theory of operation:

1. A metric is a *family*: one name, one type, one help text, and one child per
   label-value tuple (``family.labels("Produce")``; a family without labels is its
   own only child). Children are made on first use and kept: a child's cell is a
   plain attribute, so the hot path of an instrumented caller that holds on to a
   child costs one attribute add.
2. Histograms keep one count per bucket (not cumulative) plus the sum and the
   total; the exposition makes the counts cumulative and adds ``le="+Inf"``. The
   bucket of a value is found with ``bisect`` over the upper bounds (``le`` is
   inclusive, as Prometheus: a value equal to a bound goes in that bucket). A
   histogram made with ``thread_safe=True`` takes a lock per observation (for the
   ZooKeeper and storage hooks, which run in worker threads); the rest run on the
   event loop thread only and take none.
3. Most of a broker's metrics are not kept here at all: they already exist as
   state (the partitions, the purgatories, the counters on hot-path objects) and
   a *collector* (``Registry.add_collector``) turns that state into families when
   Prometheus scrapes. Nothing is computed between scrapes.
4. ``Registry.collect()`` returns every family (registered metrics in
   registration order, then each collector's), a collector that raises is logged
   and skipped: a broken metric never breaks the scrape or the broker.
"""

from __future__ import annotations

import bisect
import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

COUNTER, GAUGE, HISTOGRAM, SUMMARY, UNTYPED = "counter", "gauge", "histogram", "summary", \
    "untyped"
Labels = tuple[tuple[str, str], ...]
Child = TypeVar("Child")                        # a family's child: what labels() gives
F = TypeVar("F", bound="_Family[Any]")          # a family as registered
INF = math.inf


@dataclass(slots=True)
class Sample:
    """One line of the exposition: ``<family name><suffix>{labels} value``."""

    suffix: str          # "", or "_bucket", "_sum", "_count" of a histogram/summary
    labels: Labels
    value: float


@dataclass(slots=True)
class MetricFamily:
    name: str
    type: str
    help: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, value: float, labels: Labels = (), suffix: str = "") -> None:
        self.samples.append(Sample(suffix, labels, value))


class _Family(Generic[Child]):
    """What counters, gauges and histograms share: the name, help and children (of
    type ``Child``: CounterChild, GaugeChild, HistogramChild)."""

    type = UNTYPED

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        check_name(name)
        for label in labelnames:
            check_label_name(label)
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        self._lock = threading.Lock()        # child creation only
        if type(self) is not Histogram:
            self._init_unlabelled()

    def _init_unlabelled(self) -> None:
        """A family without labels has its one child (at 0) from the start."""
        if not self.labelnames:
            self.labels()

    def labels(self, *values: object) -> Child:
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}, got {key}")
            with self._lock:
                child = self._children.setdefault(key, self._new_child())
        return child

    def remove(self, *values: object) -> None:
        self._children.pop(tuple(str(v) for v in values), None)

    def _new_child(self) -> Child:
        raise NotImplementedError

    def _label_pairs(self, key: tuple[str, ...]) -> Labels:
        return tuple(zip(self.labelnames, key))

    def collect(self) -> MetricFamily:
        raise NotImplementedError


class CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class Counter(_Family[CounterChild]):
    """Only goes up. The exposition names it ``<name>_total`` (``name`` is given
    without the suffix, as the Prometheus clients take it)."""

    type = COUNTER

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)

    def collect(self) -> MetricFamily:
        fam = MetricFamily(self.name + "_total", COUNTER, self.help)
        for key, child in list(self._children.items()):
            fam.add(child.value, self._label_pairs(key))
        return fam


class GaugeChild:
    __slots__ = ("value", "callback")

    def __init__(self) -> None:
        self.value = 0.0
        self.callback: Callable[[], float] | None = None

    def set(self, value: float) -> None:
        self.value = value

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set_function(self, fn: Callable[[], float]) -> None:
        """Compute the value at scrape time (a callback gauge)."""
        self.callback = fn

    def get(self) -> float:
        return float(self.callback()) if self.callback is not None else self.value


class Gauge(_Family[GaugeChild]):
    type = GAUGE

    def _new_child(self) -> GaugeChild:
        return GaugeChild()

    def set(self, value: float) -> None:
        self.labels().set(value)

    def set_function(self, fn: Callable[[], float]) -> None:
        self.labels().set_function(fn)

    def collect(self) -> MetricFamily:
        fam = MetricFamily(self.name, GAUGE, self.help)
        for key, child in list(self._children.items()):
            try:
                value = child.get()
            except Exception:
                log.exception("gauge %s%s failed", self.name, key)
                continue
            fam.add(value, self._label_pairs(key))
        return fam


class HistogramChild:
    """Counts per bucket (not cumulative), the sum and the total."""

    __slots__ = ("bounds", "counts", "sum", "count", "_lock")

    def __init__(self, bounds: list[float], thread_safe: bool) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)     # the last one: above every bound
        self.sum = 0.0
        self.count = 0
        self._lock = threading.Lock() if thread_safe else None

    def observe(self, value: float) -> None:
        if self._lock is None:
            self.counts[bisect.bisect_left(self.bounds, value)] += 1
            self.sum += value
            self.count += 1
            return
        with self._lock:
            self.counts[bisect.bisect_left(self.bounds, value)] += 1
            self.sum += value
            self.count += 1

    def snapshot(self) -> tuple[list[int], float, int]:
        if self._lock is None:
            return list(self.counts), self.sum, self.count
        with self._lock:
            return list(self.counts), self.sum, self.count


class Histogram(_Family[HistogramChild]):
    type = HISTOGRAM

    def __init__(self, name: str, help: str, labelnames: Sequence[str] = (), *,
                 buckets: Sequence[float], thread_safe: bool = False) -> None:
        super().__init__(name, help, labelnames)
        if "le" in self.labelnames:
            raise ValueError(f"{name}: 'le' is reserved for the buckets")
        bounds = sorted(float(b) for b in buckets if b != INF)
        if not bounds or len(set(bounds)) != len(bounds):
            raise ValueError(f"{name}: buckets must be distinct and not empty")
        self.bounds = bounds
        self.thread_safe = thread_safe
        self._init_unlabelled()

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.bounds, self.thread_safe)

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def collect(self) -> MetricFamily:
        fam = MetricFamily(self.name, HISTOGRAM, self.help)
        for key, child in list(self._children.items()):
            counts, total, count = child.snapshot()
            add_histogram(fam, self._label_pairs(key), self.bounds, counts, total, count)
        return fam


def add_histogram(fam: MetricFamily, labels: Labels, bounds: Sequence[float],
                  counts: Sequence[int], total: float, count: int) -> None:
    """The samples of one histogram child: cumulative ``_bucket``s ending with
    ``le="+Inf"`` (equal to ``_count``), then ``_sum`` and ``_count``."""
    running = 0
    for bound, n in zip(bounds, counts):
        running += n
        fam.add(running, labels + (("le", format_bound(bound)),), "_bucket")
    fam.add(count, labels + (("le", "+Inf"),), "_bucket")
    fam.add(total, labels, "_sum")
    fam.add(count, labels, "_count")


def format_bound(bound: float) -> str:
    """An ``le`` value as the Go and Java clients write it: 0.5, 1.0, 2.5, +Inf."""
    if bound == INF:
        return "+Inf"
    return repr(float(bound))


Collector = Callable[[], Iterable[MetricFamily]]


class Registry:
    def __init__(self) -> None:
        self._metrics: list[_Family[Any]] = []
        self._collectors: list[Collector] = []

    def register(self, metric: F) -> F:
        if any(m.name == metric.name for m in self._metrics):
            raise ValueError(f"metric {metric.name} registered twice")
        self._metrics.append(metric)
        return metric

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        return self.register(Counter(name, help, labelnames))

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self.register(Gauge(name, help, labelnames))

    def histogram(self, name: str, help: str, labelnames: Sequence[str] = (), *,
                  buckets: Sequence[float], thread_safe: bool = False) -> Histogram:
        return self.register(Histogram(
            name, help, labelnames, buckets=buckets, thread_safe=thread_safe))

    def add_collector(self, collector: Collector) -> None:
        self._collectors.append(collector)

    def collect(self) -> list[MetricFamily]:
        out = [m.collect() for m in self._metrics]
        for collector in self._collectors:
            try:
                out.extend(collector())
            except Exception:
                log.exception("metrics collector %s failed; its families are left out",
                              getattr(collector, "__qualname__", collector))
        return out


def check_name(name: str) -> None:
    """Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*."""
    if not name or not (name[0].isalpha() or name[0] in "_:") \
            or not all(c.isalnum() or c in "_:" for c in name) or not name.isascii():
        raise ValueError(f"invalid metric name {name!r}")


def check_label_name(name: str) -> None:
    """Label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with __ (reserved)."""
    if not name or not (name[0].isalpha() or name[0] == "_") or name.startswith("__") \
            or not all(c.isalnum() or c == "_" for c in name) or not name.isascii():
        raise ValueError(f"invalid label name {name!r}")
