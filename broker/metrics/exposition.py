"""The Prometheus text exposition format, version 0.0.4 (sans-I/O: families in,
text out).

Layout, per family (families of the same name are merged: one HELP and TYPE)::

    # HELP <name> <help, with \\ and newline escaped>
    # TYPE <name> counter|gauge|histogram|summary|untyped
    <name><suffix>{<label>="<value>",...} <value>

* Label values escape backslash (``\\\\``), double quote (``\\"``) and newline
  (``\\n``); HELP escapes backslash and newline only.
* Values: integers without a fraction (``42``), other floats as Python's repr
  (shortest round-trip form), ``+Inf``, ``-Inf``, ``NaN``. No timestamps.
* A histogram's samples are ``_bucket`` (cumulative, ``le`` last among its
  labels, ending with ``le="+Inf"``), ``_sum`` and ``_count``
  (``registry.add_histogram``); a counter family is named with its ``_total``
  (HELP, TYPE and samples alike, as the Python client writes 0.0.4).
* The text ends with a newline; the content type is ``CONTENT_TYPE``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from broker.metrics.registry import MetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def format_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(families: Iterable[MetricFamily]) -> str:
    """The exposition of ``families`` (see the module docstring)."""
    merged: dict[str, MetricFamily] = {}
    for fam in families:
        seen = merged.get(fam.name)
        if seen is None:
            merged[fam.name] = MetricFamily(fam.name, fam.type, fam.help, list(fam.samples))
        else:
            seen.samples.extend(fam.samples)
    lines: list[str] = []
    append = lines.append
    label_text: dict[tuple[tuple[str, str], ...], str] = {}   # shared label sets, once
    for fam in merged.values():
        name = fam.name
        append(f"# HELP {name} {escape_help(fam.help)}")
        append(f"# TYPE {name} {fam.type}")
        for s in fam.samples:
            labels = s.labels
            if labels:
                text = label_text.get(labels)
                if text is None:
                    text = "{" + ",".join(f'{k}="{escape_label_value(v)}"'
                                          for k, v in labels) + "}"
                    if len(label_text) < 100_000:
                        label_text[labels] = text
                append(f"{name}{s.suffix}{text} {format_value(s.value)}")
            else:
                append(f"{name}{s.suffix} {format_value(s.value)}")
    lines.append("")
    return "\n".join(lines)
