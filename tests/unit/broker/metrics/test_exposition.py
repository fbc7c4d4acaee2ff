"""The registry and the Prometheus text format 0.0.4: HELP/TYPE lines, escaping,
counters with _total, histograms with cumulative buckets and le="+Inf", callback
gauges computed at scrape time, a failing collector left out."""

from __future__ import annotations

import math

import pytest

from broker.metrics.exposition import escape_label_value, format_value, render
from broker.metrics.registry import GAUGE, MetricFamily, Registry


def test_counter_gauge_histogram_text() -> None:
    r = Registry()
    c = r.counter("kafka_x_requests", "Requests", ["request"])
    c.labels("Produce").inc()
    c.labels("Produce").inc(2)
    c.labels("Fetch").inc()
    g = r.gauge("kafka_x_size", "Size")
    g.set(7)
    h = r.histogram("kafka_x_timems", "Time", ["request"], buckets=[1, 5, 10])
    for v in (0.5, 1.0, 3, 10, 11):
        h.labels("Produce").observe(v)
    text = render(r.collect())
    lines = text.splitlines()
    assert "# HELP kafka_x_requests_total Requests" in lines
    assert "# TYPE kafka_x_requests_total counter" in lines
    assert 'kafka_x_requests_total{request="Produce"} 3' in lines
    assert 'kafka_x_requests_total{request="Fetch"} 1' in lines
    assert "# TYPE kafka_x_size gauge" in lines and "kafka_x_size 7" in lines
    assert "# TYPE kafka_x_timems histogram" in lines
    # le is inclusive: 1.0 goes in le="1.0"; cumulative counts; +Inf = count
    assert 'kafka_x_timems_bucket{request="Produce",le="1.0"} 2' in lines
    assert 'kafka_x_timems_bucket{request="Produce",le="5.0"} 3' in lines
    assert 'kafka_x_timems_bucket{request="Produce",le="10.0"} 4' in lines
    assert 'kafka_x_timems_bucket{request="Produce",le="+Inf"} 5' in lines
    assert 'kafka_x_timems_sum{request="Produce"} 25.5' in lines
    assert 'kafka_x_timems_count{request="Produce"} 5' in lines
    assert text.endswith("\n")


def test_escaping() -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    fam = MetricFamily("m", GAUGE, "line one\nback\\slash")
    fam.add(1, (("topic", 'we"ird\n'),))
    text = render([fam])
    assert "# HELP m line one\\nback\\\\slash\n" in text
    assert 'm{topic="we\\"ird\\n"} 1\n' in text


def test_values() -> None:
    assert format_value(3) == "3"
    assert format_value(3.0) == "3"
    assert format_value(0.25) == "0.25"
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"


def test_callback_gauge_is_computed_at_scrape_time() -> None:
    r = Registry()
    state = {"n": 1}
    r.gauge("kafka_x_live", "Live").set_function(lambda: state["n"])
    assert "kafka_x_live 1\n" in render(r.collect())
    state["n"] = 5
    assert "kafka_x_live 5\n" in render(r.collect())


def test_families_of_one_name_are_merged_and_a_failing_collector_is_skipped() -> None:
    r = Registry()

    def good() -> list[MetricFamily]:
        f = MetricFamily("kafka_y", GAUGE, "y")
        f.add(1, (("topic", "a"),))
        return [f]

    def bad() -> list[MetricFamily]:
        raise RuntimeError("boom")

    r.add_collector(good)
    r.add_collector(bad)
    r.add_collector(good)
    text = render(r.collect())
    assert text.count("# TYPE kafka_y gauge") == 1
    assert text.count('kafka_y{topic="a"} 1') == 2


def test_bad_names_and_labels_are_refused() -> None:
    r = Registry()
    with pytest.raises(ValueError):
        r.counter("1bad", "x")
    with pytest.raises(ValueError):
        r.counter("ok", "x", ["__reserved"])
    with pytest.raises(ValueError):
        r.histogram("h", "x", ["le"], buckets=[1])
    c = r.counter("dup", "x")
    with pytest.raises(ValueError):
        r.counter("dup", "x")
    with pytest.raises(ValueError):
        c.inc(-1)
    with pytest.raises(ValueError):
        r.counter("lab", "x", ["a"]).labels("1", "2")


def test_thread_safe_histogram_counts_every_observation() -> None:
    import threading
    r = Registry()
    h = r.histogram("zk", "x", buckets=[1, 10], thread_safe=True)

    def work() -> None:
        for _ in range(5000):
            h.observe(2)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "zk_count 20000\n" in render(r.collect())
