"""Each handler module opens with the APIs it serves, in one form:
``Name (API key K), versions A-B`` (or ``version N``), and that claim matches
what it registers in ``broker.dispatch.REGISTRY`` (which ApiVersions advertises)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re

import pytest

import broker.handlers as pkg
from broker.dispatch import REGISTRY, load_handlers

# "Produce (API key 0), versions 0-11" / "OffsetDelete (API key 47), version 0"
CLAIM = re.compile(r"(\w+) \(API key (\d+)\), (?:versions (\d+)-(\d+)|version (\d+))")
MODULES = sorted(info.name for info in pkgutil.iter_modules(pkg.__path__))


def claims(module_name: str) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) named in the docstring's first paragraph."""
    module = importlib.import_module(f"{pkg.__name__}.{module_name}")
    doc = ast.get_docstring(ast.parse(open(module.__file__ or "", encoding="utf-8").read()))
    assert doc, f"{module_name} has no docstring"
    head = " ".join(doc.split("\n\n")[0].split())
    out = {}
    for m in CLAIM.finditer(head):
        lo = int(m.group(3) if m.group(3) is not None else m.group(5))
        hi = int(m.group(4) if m.group(4) is not None else m.group(5))
        out[int(m.group(2))] = (lo, hi)
    return out


def registered(module_name: str) -> dict[int, tuple[int, int]]:
    return {r.api_key: (r.min_version, r.max_version) for r in REGISTRY.values()
            if r.fn.__module__ == f"{pkg.__name__}.{module_name}"}


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_names_the_registered_versions(module_name: str) -> None:
    load_handlers()
    assert claims(module_name) == registered(module_name)


def test_every_registration_is_claimed_by_its_module() -> None:
    load_handlers()
    claimed = {k for m in MODULES for k in claims(m)}
    assert claimed == set(REGISTRY)
