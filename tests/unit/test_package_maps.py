"""Every package's ``__init__`` docstring is its map: it names every module and every
sub-package directly inside it, and names no ``.py`` file of its own that is gone.

The maps are how a newcomer walks the code (STYLE.md: a room of its own has a docstring
map listing every module); a module added without a line in its map, or a line left
behind by a module removed, is what this catches. Read with ``ast``: nothing is imported.

A name counts as present when it appears as a word not preceded by a dot or a word
character (``log.py``, ``log``, ``spec/``). The stale-file check reads only the map's
list lines (a line that starts, after spaces, with ``name.py`` followed by two spaces or
more, the format the maps use): file names in prose may be another package's.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("protocol", "storage", "client", "broker", "controller", "tools", "spark_jobs")
LIST_LINE = re.compile(r"^\s*(?:\|\s*``)?([A-Za-z_]\w*)\.py(?:``)?\s{2,}")


def _packages() -> list[Path]:
    out = []
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(REPO / root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if "__init__.py" in filenames:
                out.append(Path(dirpath))
    return out


def _map_of(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def _members(package: Path) -> list[str]:
    modules = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    subpackages = [p.name for p in package.iterdir()
                   if p.is_dir() and (p / "__init__.py").exists()]
    return sorted(modules + subpackages)


def _named(doc: str, name: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(\.py|/|\b)", doc) is not None


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_map_names_every_module(package: Path) -> None:
    doc = _map_of(package)
    missing = [m for m in _members(package) if not _named(doc, m)]
    assert not missing, f"{package.relative_to(REPO)}/__init__.py's map omits {missing}"


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_map_lists_no_module_that_is_gone(package: Path) -> None:
    listed = [m.group(1) for line in _map_of(package).splitlines()
              if (m := LIST_LINE.match(line))]
    gone = [f"{name}.py" for name in listed if not (package / f"{name}.py").exists()]
    assert not gone, f"{package.relative_to(REPO)}/__init__.py's map lists {gone}"


def test_the_checks_see_a_missing_module(tmp_path: Path) -> None:
    """The two checks on a made-up package: one module unnamed, one listed but gone."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Map.\n\n    a.py     the first\n    gone.py  removed\n"""\n')
    (pkg / "a.py").write_text("")
    (pkg / "b.py").write_text("")
    doc = _map_of(pkg)
    assert [m for m in _members(pkg) if not _named(doc, m)] == ["b"]
    assert [m.group(1) for line in doc.splitlines() if (m := LIST_LINE.match(line))] == \
        ["a", "gone"]
