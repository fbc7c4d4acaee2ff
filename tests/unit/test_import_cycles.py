"""No import cycles among the project's modules, checked on the source with ``ast``.

An edge ``a -> b`` is any import in module ``a`` of module ``b`` that runs: at the
top, inside a function (a function-local import still runs, it only runs later, so
a cycle hidden that way is a cycle) or under ``try``. Not edges:

* imports under ``if TYPE_CHECKING:`` (they never run);
* ``from pkg import submodule`` to ``pkg``'s ``__init__``: the edge goes to
  ``pkg.submodule`` itself. (Python runs ``pkg/__init__`` first, but a package that
  re-exports its submodules would otherwise be in a "cycle" with each of them.)

``from a.b import name`` where ``name`` is not a module is an edge to ``a.b``.
A cycle is a strongly connected component of two or more modules (Tarjan).

Two rules: no cycle of run-time edges at all; and counting the type hints' imports
too (``if TYPE_CHECKING:``, ``typing_too``), no circle of more than three modules --
collaborators meet through Protocols in leaf modules (coordinator/group/classic/
port.py, controller/controller_ops.py), not by each importing the other's class.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.unit.test_layering import PACKAGES, REPO, _resolve_relative, module_name

Graph = dict[str, set[str]]


def _runtime_nodes(tree: ast.AST, typing_too: bool = False) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (or
    ``if typing.TYPE_CHECKING:``), unless ``typing_too``; their ``else`` branches are
    kept."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if not typing_too and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def runtime_imports(source: str, module: str, is_package: bool, known: set[str],
                    typing_too: bool = False) -> set[str]:
    """The modules in ``known`` that ``source`` (module ``module``) imports at run time
    (and for type hints only, with ``typing_too``)."""
    out: set[str] = set()

    def add(name: str) -> None:
        # the longest known module that ``name`` is or lies within
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            candidate = ".".join(parts[:i])
            if candidate in known:
                out.add(candidate)
                return

    for node in _runtime_nodes(ast.parse(source), typing_too):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base)
    out.discard(module)
    return out


def project_graph(typing_too: bool = False) -> Graph:
    paths = [p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))
             if "__pycache__" not in p.parts]
    known = {module_name(p) for p in paths}
    return {module_name(p): runtime_imports(p.read_text(encoding="utf-8"), module_name(p),
                                            p.name == "__init__.py", known, typing_too)
            for p in paths}


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module, each sorted (Tarjan,
    iterative so a deep import chain cannot overflow the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


# --- the rule, on the real tree --------------------------------------------------------


def test_no_import_cycles_among_the_projects_modules() -> None:
    assert cycles(project_graph()) == []


def test_no_circle_counting_type_hints() -> None:
    """Issue 29 allowed circles of up to 3 modules through imports made for type hints;
    none is left: a module takes what it needs of its caller as a Protocol beside it."""
    assert cycles(project_graph(typing_too=True)) == []


# --- the checker itself ------------------------------------------------------------------


def test_graph_sees_the_tree_and_function_local_imports() -> None:
    graph = project_graph()
    assert "client.verbs" in graph["client.producer"]
    assert "protocol.api_keys" in graph["client.verbs"]
    assert all(not name.startswith(("os", "asyncio")) for name in graph["client.verbs"])


def test_edges_runtime_only_and_submodules_not_their_package() -> None:
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "other"}
    src = (
        "from typing import TYPE_CHECKING\n"
        "from pkg import a\n"              # -> pkg.a, not pkg
        "from pkg.b import thing\n"        # -> pkg.b
        "if TYPE_CHECKING:\n"
        "    from pkg.c import Hint\n"     # never runs: no edge
        "else:\n"
        "    import other\n"               # runs: an edge
        "def f():\n"
        "    from . import c\n"            # function-local: an edge to pkg.c
    )
    assert runtime_imports(src, "pkg.d", False, known) == {"pkg.a", "pkg.b", "pkg.c", "other"}
    # counting type hints, the TYPE_CHECKING import is an edge too (pkg.c already is one)
    hint_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import Hint\n"
    assert runtime_imports(hint_only, "pkg.d", False, known) == set()
    assert runtime_imports(hint_only, "pkg.d", False, known, typing_too=True) == {"pkg.b"}
    assert runtime_imports("from pkg import name_not_module\n", "x", False, known) == {"pkg"}


def test_cycles_are_found_including_long_ones_and_self_loops_are_not() -> None:
    graph: Graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d", "a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]
    assert cycles({"x": {"y"}, "y": set()}) == []
    chain = {f"m{i}": {f"m{i + 1}"} for i in range(5000)}
    chain["m5000"] = {"m0"}
    assert len(cycles(chain)[0]) == 5001
