"""Every package's ``__init__`` docstring is its map: it names every module and every
sub-package directly inside it, and lists no file or sub-package of its own that is gone.

The maps are how a newcomer walks the code (STYLE.md: a room of its own has a docstring
map listing every module); a module added without a line in its map, or a line left
behind by a module removed, is what this catches. Read with ``ast``: nothing is imported.

A name counts as present when it appears as a word not preceded by a dot or a word
character (``log.py``, ``log``, ``spec/``). The stale-entry check reads only the map's
entry lines, not its prose, because prose names other packages' files ("storage/log.py",
"log.py in storage/"). An entry line is indented and starts with one name or a comma
list of them (``log.py``, ``spec/``, ``zk.py, zkclient.py``) followed by whitespace or
the end of the line, or it is a table row starting ``| ``name.py`` |``. An indented
prose line that begins with another package's bare file name would be misread; the maps
have none.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("protocol", "storage", "client", "coordinator", "broker", "controller", "tools",
         "spark_jobs", "bench")    # bench/ only counts once it has an __init__.py

_NAME = r"[A-Za-z_]\w*(?:/[A-Za-z_]\w*)*(?:\.py|/)"
ENTRY_LINE = re.compile(rf"^\s+(?P<names>{_NAME}(?:,\s*{_NAME})*)(?=\s|$)")
TABLE_ROW = re.compile(rf"^\|\s*``(?P<names>{_NAME})``\s*\|")


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


def missing_from_map(package: Path) -> list[str]:
    """The modules and sub-packages of ``package`` its map does not name."""
    doc = _map_of(package)
    return [m for m in _members(package) if not _named(doc, m)]


def listed_entries(doc: str) -> list[str]:
    """The names a map's entry lines list (``log.py``, ``spec/``), in order."""
    out: list[str] = []
    for line in doc.splitlines():
        m = ENTRY_LINE.match(line) or TABLE_ROW.match(line)
        if m:
            out += [n.strip() for n in m.group("names").split(",")]
    return out


def gone_from_package(package: Path) -> list[str]:
    """The entries of ``package``'s map that name no file or directory in it."""
    return [n for n in listed_entries(_map_of(package)) if not (package / n).exists()]


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_map_names_every_module(package: Path) -> None:
    missing = missing_from_map(package)
    assert not missing, f"{package.relative_to(REPO)}/__init__.py's map omits {missing}"


@pytest.mark.parametrize("package", _packages(), ids=lambda p: str(p.relative_to(REPO)))
def test_map_lists_no_module_that_is_gone(package: Path) -> None:
    gone = gone_from_package(package)
    assert not gone, f"{package.relative_to(REPO)}/__init__.py's map lists {gone}, not there"


def test_every_root_is_walked() -> None:
    walked = {p.relative_to(REPO).parts[0] for p in _packages()}
    assert walked >= set(ROOTS) - {"bench"}


def test_the_checks_on_a_made_up_package(tmp_path: Path) -> None:
    """One module unnamed; entries gone in each entry form; prose about other files."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "__init__.py").write_text("")
    for name in ("a.py", "b.py", "long_name.py", "c.py"):
        (pkg / name).write_text("")
    (pkg / "__init__.py").write_text('''"""Map.

    a.py        the first
    long_name.py overflows its column
    c.py, gone1.py   a comma list
    gone2.py    removed
    sub/        a sub-package
    old/        a sub-package removed

| ``gone3.py`` | a table row |

Prose: storage/log.py and log.py in storage/ are another package's.
"""
''')
    assert missing_from_map(pkg) == ["b"]
    assert listed_entries(_map_of(pkg)) == [
        "a.py", "long_name.py", "c.py", "gone1.py", "gone2.py", "sub/", "old/", "gone3.py"]
    assert gone_from_package(pkg) == ["gone1.py", "gone2.py", "old/", "gone3.py"]
