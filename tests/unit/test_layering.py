"""The dependency direction from STYLE.md and DESIGN.md, checked on the source with ``ast``.

    protocol    pure: imports nothing of ours outside protocol/; no event loop, no sockets
    storage     sync file I/O: of ours, only protocol.records and protocol.compression (and storage)
    client      our Kafka client: of ours, only protocol (``python -c "import client"`` loads
                nothing of broker, controller, storage, tools, spark_jobs or pyspark)
    coordinator the group and transaction coordinators: of ours, only protocol and storage
                (the broker builds them over its services in broker/coordination/)
    broker      uses protocol, storage, client and coordinator; of controller, only what
                controller/__init__.py exports (ClusterStore, Controller, ...), never a submodule
    controller  uses protocol and client; at most one module of it imports kazoo, nothing else does
    tools       uses client (and protocol: error codes, record batches), nothing else of ours;
                except that dump-log (tools.dump_log, tools.dump_log_format) reads the files
                through storage's readers, as Kafka's kafka-dump-log.sh does
    spark_jobs  uses client, storage (its readers) and protocol
    leaves      nobody imports tools, spark_jobs or bench. (The ``pybroker`` front door,
                broker/cli.py, names each tool's module in a table and imports the one asked
                for at run time: a command dispatch, not a dependency of the daemon.)

Import cycles among the project's modules are checked in test_import_cycles.py.

Every ``import``/``from ... import`` counts, including relative ones, ones under
``if TYPE_CHECKING:`` and ``importlib.import_module("...")`` with a literal name.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "storage", "client", "coordinator", "broker", "controller", "tools",
            "spark_jobs", "bench")
# package -> the packages of ours it may import (besides itself); None: anything
MAY_IMPORT: dict[str, tuple[str, ...] | None] = {
    "protocol": (),
    "client": ("protocol",),
    "coordinator": ("protocol", "storage"),
    "broker": ("protocol", "storage", "client", "coordinator", "controller"),
    "controller": ("protocol", "client"),
    "tools": ("client", "protocol"),
    "spark_jobs": ("client", "storage", "protocol"),
    "bench": None,
}
LEAVES = ("tools", "spark_jobs", "bench")
NO_IO_MODULES = ("asyncio", "socket", "socketserver", "selectors", "ssl", "uvloop")
STORAGE_MAY_IMPORT = ("protocol.records", "protocol.compression")


# --- import extraction ----------------------------------------------------------------


def module_name(path: Path, root: Path = REPO) -> str:
    """``storage/log.py`` -> ``storage.log``; ``protocol/spec/__init__.py`` -> ``protocol.spec``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """Absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 >= len(package):  # Python refuses these too
        raise ValueError(f"{module}: relative import beyond the top-level package")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imported_names(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every dotted name ``source`` imports. ``from a.b import c`` gives ``a.b.c`` (``c`` may be
    a submodule or just a name; either way it lies within ``a.b``, which is what rules test)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            names.update(f"{base}.{alias.name}" if alias.name != "*" else base for alias in node.names)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func):
            if node.args and isinstance(node.args[0], ast.Constant):
                if isinstance(node.args[0].value, str):
                    names.add(node.args[0].value)
    return names


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def within(name: str, prefixes: Iterable[str]) -> bool:
    """Whether ``name`` is one of ``prefixes`` or inside one of them (dotted-path aware)."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


# --- the tree -----------------------------------------------------------------------


def source_modules() -> Iterator[tuple[str, set[str]]]:
    """(module name, names it imports) for every .py under the project's packages."""
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            module = module_name(path)
            yield module, imported_names(
                path.read_text(encoding="utf-8"), module, path.name == "__init__.py"
            )


Modules = dict[str, set[str]]  # module name -> names it imports


def _violations(modules: Modules, package: str, rule: Callable[[str], bool]) -> list[str]:
    """"<module> imports <name>" for each import in ``package`` that ``rule`` flags."""
    bad = []
    for module, names in modules.items():
        if within(module, [package]):
            bad.extend(f"{module} imports {n}" for n in sorted(names) if rule(n))
    return bad


def protocol_violations(modules: Modules) -> list[str]:
    return _violations(modules, "protocol",
                       lambda n: within(n, PACKAGES) and not within(n, ["protocol"]))


def storage_violations(modules: Modules) -> list[str]:
    def bad(name: str) -> bool:
        if not within(name, PACKAGES) or within(name, ["storage"]):
            return False
        return not within(name, STORAGE_MAY_IMPORT)

    return _violations(modules, "storage", bad)


def io_violations(modules: Modules, package: str) -> list[str]:
    return _violations(modules, package, lambda n: within(n, NO_IO_MODULES))


def broker_violations(modules: Modules) -> list[str]:
    """The broker starts the controller through the package's exported names only
    (``from controller import Controller``); ``controller.zk``, ``controller.context`` etc.
    are internals."""
    submodules = {".".join(m.split(".")[:2]) for m in modules if m.startswith("controller.")}
    return _violations(modules, "broker", lambda n: within(n, submodules))


# The one exception to "tools use client and protocol only": ``pybroker dump-log`` reads a
# log dir's segment, index and snapshot files directly, as Kafka's kafka-dump-log.sh
# (DumpLogSegments) does, through storage's readers rather than a second set of parsers.
# These modules (exactly, not their neighbours) may import storage; no other tool may.
FILE_READING_TOOLS = ("tools.dump_log", "tools.dump_log_format")


def package_violations(modules: Modules, package: str) -> list[str]:
    """Imports of ours from ``package`` outside what MAY_IMPORT allows it."""
    allowed = MAY_IMPORT[package]
    if allowed is None:
        return []
    bad = []
    for module, names in modules.items():
        if not within(module, [package]):
            continue
        extra = ("storage",) if module in FILE_READING_TOOLS else ()
        bad.extend(f"{module} imports {n}" for n in sorted(names)
                   if within(n, PACKAGES) and not within(n, (package, *allowed, *extra)))
    return bad


def leaf_violations(modules: Modules) -> list[str]:
    """Imports of tools, spark_jobs or bench from any other package."""
    return [
        f"{module} imports {n}"
        for module, names in modules.items()
        for n in sorted(names)
        for leaf in LEAVES
        if within(n, [leaf]) and not within(module, [leaf]) and not within(module, ["bench"])
    ]


def kazoo_violations(modules: Modules) -> list[str]:
    importers = sorted(m for m, names in modules.items() if any(within(n, ["kazoo"]) for n in names))
    bad = [f"{m} imports kazoo outside controller/" for m in importers if not within(m, ["controller"])]
    if len(importers) > 1:
        bad.append(f"kazoo imported by {importers}; keep it behind one adaptor module")
    return bad


# Who may build a Kafka request body (import the message schemas, protocol.spec): the
# client, and the server side (dispatch and handlers, the coordinators' own record
# layouts, the controller's channel). Outgoing paths elsewhere go through client/.
# bench.codec measures the codec itself on a built frame; it sends nothing.
# bench.request_cpu encodes one Produce frame and sends copies of its bytes, so that
# the client costs nothing beside the broker it measures; bench.handler_cpu hands
# built frames to the handlers in-process (no connection at all).
REQUEST_CLIENTS = ("tools", "spark_jobs", "bench", "broker.replication")
REQUEST_BUILDING_ALLOWED = {"bench.codec", "bench.request_cpu", "bench.handler_cpu"}


def hand_built_request_violations(modules: Modules) -> list[str]:
    """Modules on an outgoing path that import the message schemas themselves."""
    return [f"{module} imports {n}" for module, names in sorted(modules.items())
            if within(module, REQUEST_CLIENTS) and module not in REQUEST_BUILDING_ALLOWED
            for n in sorted(names) if within(n, ["protocol.spec"])]


MODULES: Modules = dict(source_modules())


# --- the rules, on the real tree ------------------------------------------------------


def test_protocol_imports_nothing_of_ours_outside_protocol() -> None:
    assert protocol_violations(MODULES) == []


def test_storage_imports_only_records_and_compression_of_ours() -> None:
    assert storage_violations(MODULES) == []


@pytest.mark.parametrize("package", ["protocol", "storage"])
def test_pure_layers_use_no_event_loop_or_sockets(package: str) -> None:
    assert io_violations(MODULES, package) == []


def test_broker_imports_only_what_controller_exports() -> None:
    assert broker_violations(MODULES) == []


@pytest.mark.parametrize("package", [p for p, allowed in MAY_IMPORT.items() if allowed is not None])
def test_each_package_imports_only_what_it_may(package: str) -> None:
    assert package_violations(MODULES, package) == []


def test_nobody_imports_tools_spark_jobs_or_bench() -> None:
    assert leaf_violations(MODULES) == []


def test_importing_the_client_loads_nothing_else_of_ours() -> None:
    """In a fresh interpreter: ``import client`` (and every client module) pulls in no
    module of broker, controller, storage, tools, spark_jobs, nor pyspark."""
    modules = sorted(m for m in MODULES if within(m, ["client"]))
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print('\\n'.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    loaded = out.stdout.split()
    assert "client.verbs" in loaded
    forbidden = ("broker", "coordinator", "controller", "storage", "tools", "spark_jobs",
                 "pyspark", "kazoo")
    assert [m for m in loaded if within(m, forbidden)] == []


def test_kazoo_only_behind_one_controller_module() -> None:
    assert kazoo_violations(MODULES) == []


def test_outgoing_paths_build_no_request_by_hand() -> None:
    """tools, spark_jobs, bench and the broker's replication side send requests
    through client/'s verbs; none imports protocol.spec."""
    assert hand_built_request_violations(MODULES) == []


# --- the checker itself (so the rules above cannot pass vacuously) --------------------


def test_scan_sees_the_tree() -> None:
    assert "protocol.errors" in MODULES
    assert "protocol.api_keys" in MODULES
    assert "enum.IntEnum" in MODULES["protocol.api_keys"]


def test_extraction_of_every_import_form() -> None:
    src = (
        "import asyncio, os.path\n"
        "from protocol import records\n"
        "from protocol.records import RecordBatch\n"
        "from . import segment\n"
        "from .index import OffsetIndex\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from controller.context import ControllerContext\n"
        "def f():\n"
        "    import kazoo.client\n"
        "    importlib.import_module('spark_jobs.replay')\n"
    )
    names = imported_names(src, "storage.log")
    assert {"asyncio", "os.path", "protocol.records", "protocol.records.RecordBatch",
            "storage.segment", "storage.index.OffsetIndex",
            "controller.context.ControllerContext", "kazoo.client", "spark_jobs.replay"} <= names
    # in a package's __init__, "." is the package itself; ".." from a top-level package is an error
    assert "storage.sub" in imported_names("from . import sub\n", "storage", is_package=True)
    in_init = imported_names("from .fetch import X\nfrom .. import schema\n", "protocol.spec",
                             is_package=True)
    assert in_init == {"protocol.spec.fetch.X", "protocol.schema"}
    assert imported_names("from ..primitives import X\n", "protocol.spec.fetch") == {
        "protocol.primitives.X"
    }
    with pytest.raises(ValueError):
        imported_names("from ..protocol import records\n", "storage.log")


def test_rules_catch_violations() -> None:
    good: Modules = {
        "protocol.records": {"protocol.primitives.read_varint", "struct"},
        "storage.log": {"protocol.records.RecordBatch", "protocol.compression", "storage.segment", "mmap"},
        "broker.server": {"asyncio", "protocol.framing", "storage.log.PartitionLog"},
        "controller.zk": {"kazoo.client.KazooClient", "protocol.api_keys"},
        "spark_jobs.replay": {"storage.segment", "pyspark.sql"},
    }
    for check in (protocol_violations, storage_violations, broker_violations,
                  leaf_violations, kazoo_violations):
        assert check(good) == [], check.__name__
    for package in MAY_IMPORT:
        assert package_violations(good, package) == [], package
    assert io_violations(good, "protocol") == io_violations(good, "storage") == []

    assert protocol_violations({"protocol.codec": {"storage.log"}}) == ["protocol.codec imports storage.log"]
    assert storage_violations({"storage.log": {"protocol.primitives.read_int32"}})
    assert storage_violations({"storage.log": {"protocol"}})
    assert storage_violations({"storage.log": {"broker.config.BrokerConfig"}})
    assert storage_violations({"storage.log": {"protocol.recordsx"}})
    assert io_violations({"protocol.framing": {"asyncio.Queue"}}, "protocol")
    assert io_violations({"storage.segment": {"socket"}}, "storage")
    assert not io_violations({"storage.segment": {"asyncio_compat"}}, "storage")
    assert broker_violations({"broker.cli": {"controller.election"}, "controller.election": set()})
    assert broker_violations({"broker.cli": {"controller.zk.ZkClient"}, "controller.zk": set()})
    assert not broker_violations({"broker.broker": {"controller", "controller.Controller"},
                                  "controller": set(), "controller.election": set()})
    assert leaf_violations({"broker.cli": {"spark_jobs.replay.main"}})
    assert leaf_violations({"client.admin": {"tools.topics"}})
    assert not leaf_violations({"bench.groups": {"spark_jobs.replay"}, "tools.a": {"tools.b"}})
    assert package_violations({"client.pool": {"broker.config"}}, "client")
    assert package_violations({"client.pool": {"storage.log"}}, "client")
    assert not package_violations({"client.pool": {"protocol.codec", "client.errors"}}, "client")
    assert package_violations({"tools.topics": {"controller"}}, "tools")
    assert package_violations({"tools.topics": {"broker.config.BrokerConfig"}}, "tools")
    assert not package_violations({"tools.dump_log": {"storage.offset_index", "protocol.records"},
                                   "tools.dump_log_format": {"storage.txn_index"}}, "tools")
    assert package_violations({"tools.topics": {"storage.offset_index"}}, "tools")
    assert package_violations({"tools.dump_log_decoders": {"storage.txn_index"}}, "tools")
    assert package_violations({"tools.dump_log": {"broker.config"}}, "tools")
    assert package_violations({"spark_jobs.source": {"broker.client"}}, "spark_jobs")
    assert not package_violations({"spark_jobs.replay": {"storage.segment", "client.verbs"}},
                                  "spark_jobs")
    assert package_violations({"broker.cli": {"tools.topics"}}, "broker")
    assert hand_built_request_violations({"tools.topics": {"protocol.spec.api"}})
    assert hand_built_request_violations({"broker.replication.fetcher": {"protocol.spec"}})
    assert not hand_built_request_violations({"bench.codec": {"protocol.spec.api"},
                                              "broker.handlers.fetch": {"protocol.spec.api"},
                                              "tools.topics": {"client.verbs", "protocol.errors"}})
    assert package_violations({"controller.channel": {"broker.config"}}, "controller")
    assert kazoo_violations({"broker.zk": {"kazoo.client"}})
    assert kazoo_violations({"controller.zk": {"kazoo"}, "controller.election": {"kazoo.exceptions"}})
