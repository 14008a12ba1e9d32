"""The house's floors (docs/ARCHITECTURE.md): no import goes up, no circle between rooms or between modules,
the narrower rules some rooms keep, no module over 600 lines, no two rooms whose names look alike, no
retired name (the sweep's "traced pass" is its counted pass).

Every module under ccp/ is parsed with ast; every import counts, wherever it is written: at module level,
inside a function (the lazy imports that used to hide circles), under ``if TYPE_CHECKING:``,
``importlib.import_module("ccp...")`` with a literal name, and a module named by a string in a dict's value
(``cli.LAZY_COMMANDS``, ``repack._EXPORTS``: tables a lazy import reads its module from). A violation names
the importing file and line, the importing module and the module it imports.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ccp"
MAX_LINES = 600

# The rooms, lowest floor first (docs/ARCHITECTURE.md). A module may import from its own room or from a room
# on a lower floor; two rooms on one floor may not import each other, except the pairs in SAME_FLOOR_ALLOWED.
FLOORS: dict[str, int] = {
    "ccp": 0,                 # the package itself: __version__
    "ccp.errors": 0,
    "ccp.units": 0,
    "ccp.chunkcache": 0,      # the one chunk-cache type (and HDF5's default caches)
    "ccp.outfile": 0,         # where a command renames a file the user named (never over a device)
    "ccp.model": 1,           # pure math, no I/O
    "ccp.hdf5": 1,            # the one place that knows HDF5
    "ccp.store": 2,           # CellRow, schema, the run folder
    "ccp.config": 2,          # sweep-file parsing
    "ccp.matrix": 3,          # cells from a sweep
    "ccp.repack": 3,          # copy a file into new layouts (a library: layout files and paged copies are made with it)
    "ccp.workload": 4,        # data, request plans, layout files, trace replays
    "ccp.remote": 4,          # S3 sessions, fsspec files, emulated network, GET predictions
    "ccp.measurement": 5,     # timed passes, I/O log, environment, page cache
    "ccp.predict": 6,         # predictions, calibration, explain
    "ccp.run": 7,             # jobs, executors, run_sweep, plan
    "ccp.report": 8,          # reads run folders, renders
    "ccp.inspect": 9,         # apps: each imports lower rooms, not another app
    "ccp.advise": 9,
    "ccp.trace": 9,
    "ccp.tune": 9,
    "ccp.cli": 10,            # the top: commands import lazily
}
# units parses and formats for everyone and raises ccp.errors
# and chunkcache writes its label with units
SAME_FLOOR_ALLOWED = {("ccp.units", "ccp.errors"), ("ccp.chunkcache", "ccp.units")}
FLOOR_0 = frozenset({"ccp", "ccp.errors", "ccp.units", "ccp.chunkcache", "ccp.outfile"})
# Rooms that import less than their floor allows (docs/ARCHITECTURE.md, each room's paragraph): the rooms
# each may import besides its own. A room not listed here may import every room below it.
ONLY: dict[str, frozenset[str]] = {
    "ccp.model": frozenset({"ccp.chunkcache"}),      # pure math: only the chunk-cache type, not even errors
    "ccp.hdf5": FLOOR_0,
    "ccp.store": FLOOR_0,                            # the report, executors and notebooks read rows the same way
    "ccp.config": FLOOR_0 | {"ccp.hdf5"},            # filter specs; never store, matrix, workload or report
    "ccp.matrix": FLOOR_0 | {"ccp.config", "ccp.hdf5"},   # the dataset description is passed in, not looked up
    "ccp.repack": FLOOR_0 | {"ccp.hdf5", "ccp.config"},   # a library the workload and remote write files with; config: file-space settings
    "ccp.workload": FLOOR_0 | {"ccp.config", "ccp.matrix", "ccp.repack", "ccp.hdf5", "ccp.store"},   # not the model
    "ccp.remote": FLOOR_0 | {"ccp.config", "ccp.repack", "ccp.hdf5", "ccp.model"},   # config: the storage axes' settings
}


@dataclass(frozen=True)
class Import:
    path: Path           # the importing file
    line: int
    importer: str        # module name
    imported: str        # module name as written (resolved when relative)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def room(module: str) -> str:
    parts = module.split(".")
    return module if len(parts) == 1 else ".".join(parts[:2])


def modules(package: Path) -> dict[str, Path]:
    """Module name -> file for every .py under ``package`` (a package is named by its __init__.py)."""
    out = {}
    for p in sorted(package.rglob("*.py")):
        parts = list(p.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _import_module_name(node: ast.Call) -> str | None:
    """The literal module of ``importlib.import_module("x")`` / ``import_module("x")`` / ``__import__("x")``."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _strings_in_dict_values(node: ast.Dict) -> list[ast.Constant]:
    """The string constants of a dict literal's values, and of tuples or lists given as values."""
    out = []
    for v in node.values:
        items = v.elts if isinstance(v, (ast.Tuple, ast.List)) else [v]
        out += [e for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out


def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a module, parsed once per version of the file (ten checks walk the whole package)."""
    return _nodes_of(str(path), path.stat().st_mtime_ns)


@functools.cache
def _nodes_of(path: str, _mtime_ns: int) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(ast.parse(Path(path).read_text(), path)))


def imports(package: Path) -> list[Import]:
    """Every import of a module of ``package`` by a module of ``package``, wherever in the file it is written."""
    mods = modules(package)
    top = package.name
    out = []
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in _nodes(path):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from ccp import config` imports the room ccp.config; `from ccp.x import y` imports ccp.x (or ccp.x.y)
                subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in mods]
                targets = subs if subs and len(subs) == len(node.names) else [module, *subs]
            elif isinstance(node, ast.Call):
                called = _import_module_name(node)
                targets = [called] if called else []
            elif isinstance(node, ast.Dict):
                # a table of modules a lazy import reads from: {"repack": ("ccp.repack.command", "repack_command")}
                for const in _strings_in_dict_values(node):
                    if const.value in mods:
                        out.append(Import(path, const.lineno, name, const.value))
            for t in targets:
                if t == top or t.startswith(top + "."):
                    out.append(Import(path, node.lineno, name, t))
    return out


def layer_violations(package: Path, floors: dict[str, int], allowed: set[tuple[str, str]]) -> list[str]:
    root = package.parent
    out = []
    for name, path in modules(package).items():
        if room(name) not in floors:
            out.append(f"{path.relative_to(root)}: {name} is in no room of the house ({room(name)} is not a floor); "
                       "move it into one")
    for imp in imports(package):
        a, b = room(imp.importer), room(imp.imported)
        if a == b or a not in floors or b not in floors:
            if a != b and b not in floors:
                out.append(f"{imp.where(root)}: {imp.importer} imports {imp.imported}, which is in no room of the house")
            continue
        if floors[b] > floors[a]:
            out.append(f"{imp.where(root)}: {imp.importer} imports {imp.imported}: {a} (floor {floors[a]}) imports "
                       f"upward from {b} (floor {floors[b]})")
        elif floors[b] == floors[a] and (a, b) not in allowed:
            out.append(f"{imp.where(root)}: {imp.importer} imports {imp.imported}: {a} and {b} share floor "
                       f"{floors[a]} and may not import each other")
    return out


def _strongly_connected(edges: dict[str, dict[str, Import]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return comps


def room_cycles(package: Path) -> list[str]:
    """Each circle among rooms (a strongly connected component of the room graph), with the imports that make it."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports(package):
        a, b = room(imp.importer), room(imp.imported)
        if a != b:
            edges.setdefault(a, {}).setdefault(b, imp)
    root = package.parent
    out = []
    for comp in _strongly_connected(edges):
        links = [f"{imp.where(root)} ({imp.importer} imports {imp.imported})"
                 for a in comp for b, imp in sorted(edges.get(a, {}).items()) if b in comp]
        out.append(f"circle among {', '.join(comp)}: " + "; ".join(links))
    return out


def _module_of(imported: str, mods: dict[str, Path]) -> str | None:
    """The module an import names: itself, or the longest name above it that is a module
    (``import ccp.x.y`` where ``y`` is a name in ``ccp.x``)."""
    parts = imported.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in mods:
            return ".".join(parts[:n])
    return None


def module_cycles(package: Path) -> list[str]:
    """Each circle among modules (a strongly connected component of the module graph), with its imports.

    An edge is an import as written (a package's ``__init__`` is a module of its own; importing
    ``ccp.x.y`` is not counted as importing ``ccp.x``'s ``__init__``, which Python runs first but which
    takes part in a circle only through the imports it makes itself).
    """
    mods = modules(package)
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports(package):
        b = _module_of(imp.imported, mods)
        if b is not None and b != imp.importer:
            edges.setdefault(imp.importer, {}).setdefault(b, imp)
    root = package.parent
    out = []
    for comp in _strongly_connected(edges):
        links = [f"{imp.where(root)} ({imp.importer} imports {imp.imported})"
                 for a in comp for b, imp in sorted(edges.get(a, {}).items()) if b in comp]
        out.append(f"circle among modules {', '.join(comp)} (move what both need into a third module, or pass it "
                   "in from the caller): " + "; ".join(links))
    return out


def only_violations(package: Path, only: dict[str, frozenset[str]]) -> list[str]:
    """Imports a room makes outside the narrower list it keeps (``ONLY``)."""
    root = package.parent
    out = []
    for imp in imports(package):
        a, b = room(imp.importer), room(imp.imported)
        if a in only and b != a and b not in only[a]:
            allowed = f"only {', '.join(sorted(only[a]))}" if only[a] else "no other room"
            out.append(f"{imp.where(root)}: {imp.importer} imports {imp.imported}: {a} imports {allowed}")
    return out


def long_modules(package: Path, limit: int = MAX_LINES) -> list[str]:
    root = package.parent
    out = []
    for path in modules(package).values():
        n = len(path.read_text().splitlines())
        if n > limit:
            out.append(f"{path.relative_to(root)}: {n} lines (more than {limit}: usually two ideas; split it by role)")
    return out


def _report(problems: list[str]) -> str:
    return f"{len(problems)} problem(s):\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------------------------------------- the house itself

def test_no_import_goes_up_a_floor():
    problems = layer_violations(PACKAGE, FLOORS, SAME_FLOOR_ALLOWED)
    assert not problems, _report(problems)


def test_no_circle_between_rooms():
    problems = room_cycles(PACKAGE)
    assert not problems, _report(problems)


def test_no_circle_between_modules():
    # a circle inside one room is still a knot: neither module can be read, tested or moved without the other
    problems = module_cycles(PACKAGE)
    assert not problems, _report(problems)


def test_rooms_import_no_more_than_they_say():
    problems = only_violations(PACKAGE, ONLY)
    assert not problems, _report(problems)


def test_no_module_over_600_lines():
    problems = long_modules(PACKAGE)
    assert not problems, _report(problems)



# ---------------------------------------------------------------------------------------------- claims of the docs
# docs/ARCHITECTURE.md says where some things live; these tests hold the code to the claims a parser can check.

#: Names the chunk cache used to have before it became ccp.chunkcache.ChunkCache (and HDF5_1X/HDF5_2X).
OLD_CACHE_NAMES = frozenset({"CacheParams", "CacheSpec", "ChunkCacheDefault", "CacheInForce", "CACHE_1X", "CACHE_2X",
                             "_CacheLike"})
#: HDF5's default chunk-cache numbers (slots in 1.x and 2.x, w0): written out in ccp/chunkcache.py only.
HDF5_CACHE_NUMBERS = (521, 8191, 0.75)


def _names_calls_numbers(path: Path):
    """``(kind, value, line)`` for every identifier, called function name and number literal of a module."""
    for node in _nodes(path):
        if isinstance(node, ast.Name):
            yield "name", node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield "name", node.attr, node.lineno
        elif isinstance(node, ast.alias):
            yield "name", node.name.rsplit(".", 1)[-1], node.lineno
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            yield "name", node.name, node.lineno
        if isinstance(node, ast.Call):
            f = node.func
            yield "call", f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None), node.lineno
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            yield "number", node.value, node.lineno


def _found(kind: str, keep) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line}: {value!r}" for module, path in modules(PACKAGE).items()
            for k, value, line in _names_calls_numbers(path) if k == kind and keep(module, value)]


def test_the_chunk_cache_has_one_type():
    """'chunkcache is the house's one chunk-cache type': none of its old aliases is defined or used."""
    found = _found("name", lambda module, name: name in OLD_CACHE_NAMES)
    assert not found, _report(found)


def test_hdf5_default_cache_numbers_are_written_once():
    """'chunkcache is the only place HDF5's default caches (521, 8191 slots, w0 0.75) are written out'."""
    found = _found("number", lambda module, value: module != "ccp.chunkcache" and value in HDF5_CACHE_NUMBERS)
    assert not found, _report(found)


def test_one_caller_of_set_chunk_cache():
    """'Nothing above ccp.hdf5 calls H5Pset_chunk_cache': one call in the house, in ccp.hdf5.plists.dapl."""
    found = _found("call", lambda module, name: name == "set_chunk_cache")
    assert len(found) == 1 and found[0].startswith("ccp/hdf5/plists.py:"), _report(found)


# ---------------------------------------------------------------------------------------------- the checker

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "ccp"
    for rel, text in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return pkg


FLOORS_SMALL = {"ccp": 0, "ccp.errors": 0, "ccp.config": 2, "ccp.matrix": 3, "ccp.report": 8}


@pytest.mark.parametrize("source, found", [
    ("from ccp.matrix.cells import Cell\n", "ccp/config/sweep.py:1: ccp.config.sweep imports ccp.matrix.cells"),
    ("def f():\n    from ccp.report import tables\n", "ccp/config/sweep.py:2: ccp.config.sweep imports ccp.report.tables"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ccp.matrix\n", "ccp/config/sweep.py:3:"),
    ("from .. import matrix\n", "ccp.config.sweep imports ccp.matrix: ccp.config (floor 2) imports upward"),
    ("from ccp import report\n", "imports ccp.report"),
    ("import importlib\nm = importlib.import_module('ccp.report')\n", "ccp/config/sweep.py:2:"),
    ("from ccp.engine import run\n", "imports ccp.engine, which is in no room"),
], ids=["module-level", "function-local", "type-checking", "relative", "from-package", "import_module", "unknown-room"])
def test_checker_finds_an_upward_import_wherever_it_is_written(tmp_path, source, found):
    pkg = _package(tmp_path, {"__init__.py": "", "errors.py": "", "config/__init__.py": "", "config/sweep.py": source,
                              "matrix/__init__.py": "", "matrix/cells.py": "", "report/__init__.py": "",
                              "report/tables.py": "", "engine.py": ""})
    problems = layer_violations(pkg, FLOORS_SMALL, set())
    assert any(found in p for p in problems), problems


def test_checker_allows_downward_and_same_room_imports(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "errors.py": "", "config/__init__.py": "",
                              "config/sweep.py": "from ccp.errors import E\nfrom . import shapes\n",
                              "config/shapes.py": "import ccp\n", "matrix/__init__.py": "",
                              "matrix/cells.py": "def f():\n    from ccp.config.sweep import S\n"})
    assert layer_violations(pkg, FLOORS_SMALL, set()) == []
    assert room_cycles(pkg) == []


def test_checker_names_a_circle_hidden_in_functions(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "a.py": "def f():\n    from ccp.b import x\n",
                              "b.py": "def g():\n    import ccp.a\n"})
    [circle] = room_cycles(pkg)
    assert circle.startswith("circle among ccp.a, ccp.b") and "ccp/a.py:2" in circle and "ccp/b.py:2" in circle


def test_checker_names_a_long_module(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "short.py": "x = 1\n" * 600, "long.py": "x = 1\n" * 601})
    assert long_modules(pkg) == ["ccp/long.py: 601 lines (more than 600: usually two ideas; split it by role)"]


def test_same_floor_rooms_may_not_import_each_other_unless_allowed(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "tune/__init__.py": "from ccp.repack import copy\n",
                              "trace/__init__.py": "from ccp.tune import x\n", "repack/__init__.py": ""})
    floors = {"ccp": 0, "ccp.repack": 9, "ccp.tune": 9, "ccp.trace": 9}
    problems = layer_violations(pkg, floors, {("ccp.tune", "ccp.repack"), ("ccp.trace", "ccp.repack")})
    assert problems == ["ccp/trace/__init__.py:1: ccp.trace imports ccp.tune: ccp.trace and ccp.tune share floor 9 "
                        "and may not import each other"]


def test_checker_names_a_circle_between_modules_of_one_room(tmp_path):
    # the room graph cannot see it: both ends are in ccp.measurement
    pkg = _package(tmp_path, {"__init__.py": "", "measurement/__init__.py": "",
                              "measurement/runner.py": "def f():\n    from ccp.measurement.native import loop\n",
                              "measurement/native.py": "from ccp.measurement.runner import _timed_close\n",
                              "measurement/env.py": "from ccp.measurement import runner\n"})
    assert room_cycles(pkg) == []
    [circle] = module_cycles(pkg)
    assert circle.startswith("circle among modules ccp.measurement.native, ccp.measurement.runner ")
    assert "ccp/measurement/runner.py:2 (ccp.measurement.runner imports ccp.measurement.native)" in circle
    assert "ccp/measurement/native.py:1 (ccp.measurement.native imports ccp.measurement.runner)" in circle


def test_checker_counts_a_package_init_as_its_own_module(tmp_path):
    # importing ccp.model.cache runs ccp/model/__init__.py first, but that is no circle unless the init imports back
    pkg = _package(tmp_path, {"__init__.py": "", "model/__init__.py": "from ccp.model.cache import simulate\n",
                              "model/cache.py": "from ccp.model.grid import ChunkGrid\n", "model/grid.py": "X = 1\n"})
    assert module_cycles(pkg) == []
    (pkg / "model" / "grid.py").write_text("from ccp.model import simulate\n")
    [circle] = module_cycles(pkg)
    assert circle.startswith("circle among modules ccp.model, ccp.model.cache, ccp.model.grid ")


LAZY = """LAZY_COMMANDS = {
    "tune": ("ccp.tune.command", "tune_command"),
    "name": ("ccp.tune.nothing", "not a module"),
}
"""


@pytest.mark.parametrize("files, circle, upward", [
    ({"cli.py": LAZY, "tune/command.py": "def f():\n    import importlib\n    importlib.import_module('ccp.cli')\n"},
     "ccp/cli.py:2 (ccp.cli imports ccp.tune.command)", "ccp/tune/command.py:3: ccp.tune.command imports ccp.cli"),
    ({"tune/__init__.py": "_EXPORTS = {'run': 'ccp.cli'}\n", "cli.py": "from ccp.tune import run\n"},
     "ccp/tune/__init__.py:1 (ccp.tune imports ccp.cli)", "ccp/tune/__init__.py:1: ccp.tune imports ccp.cli"),
], ids=["lazy-commands", "lazy-exports"])
def test_checker_sees_modules_named_in_a_dict_of_lazy_imports(tmp_path, files, circle, upward):
    pkg = _package(tmp_path, {"__init__.py": "", "tune/__init__.py": "", "tune/command.py": "", **files})
    assert any(circle in p for p in module_cycles(pkg)), module_cycles(pkg)
    problems = layer_violations(pkg, {"ccp": 0, "ccp.tune": 9, "ccp.cli": 10}, set())
    assert any(upward in p and "imports upward" in p for p in problems), problems


def test_checker_ignores_strings_that_name_no_module(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "a.py": "D = {'k': 'ccp.b.nothing', 'j': ('ccp', 'x')}\n"
                                                         "S = 'ccp.b'\n", "b.py": "from ccp import a\n"})
    # 'ccp.b.nothing' is no module, a string outside a dict is no import; ('ccp', 'x') names the package
    assert [(i.importer, i.imported) for i in imports(pkg)] == [("ccp.a", "ccp"), ("ccp.b", "ccp.a")]


@pytest.mark.parametrize("source, found", [
    ("from ccp.errors import E\n", ""),
    ("from ccp.hdf5 import plists\n", "ccp/store/row.py:1: ccp.store.row imports ccp.hdf5.plists: ccp.store imports only "
                                       "ccp, ccp.chunkcache, ccp.errors, ccp.outfile, ccp.units"),
    ("def f():\n    import ccp.model\n", "ccp/store/row.py:2: ccp.store.row imports ccp.model"),
], ids=["floor-0", "hdf5", "model-lazily"])
def test_a_room_that_imports_only_floor_0_is_held_to_it(tmp_path, source, found):
    pkg = _package(tmp_path, {"__init__.py": "", "errors.py": "", "hdf5/__init__.py": "", "hdf5/plists.py": "",
                              "model/__init__.py": "", "store/__init__.py": "", "store/row.py": source})
    problems = only_violations(pkg, {"ccp.store": FLOOR_0})
    assert (problems == []) if not found else any(found in p for p in problems), problems


def test_the_matrix_opens_no_file():
    """'the dataset description is passed in, not looked up': ccp.matrix imports neither h5py nor any of ccp.hdf5
    but its filter registry (filter specs checked against the dataset's type)."""
    found = []
    for module, path in modules(PACKAGE).items():
        if room(module) != "ccp.matrix":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                      if n.split(".")[0] in ("h5py", "netCDF4", "h5netcdf")
                      or (n.startswith("ccp.hdf5") and n != "ccp.hdf5.filters")]
    assert not found, _report(found)


# (read_bytes is not among them: the report embeds the PNGs it drew itself in a self-contained page)
READS = frozenset({"read_parquet", "read_csv", "read_text", "safe_load", "load", "loads", "open"})


def test_the_report_reads_run_folders_only_through_the_store():
    """'Floor 8 reads run folders (through store)': ccp.report opens, parses or reads no file itself; cells,
    parts, env.json, run.json and sweep.yaml come from ccp.store.reader (with the upgrades of older schemas)."""
    found = _found("call", lambda module, name: room(module) == "ccp.report" and name in READS)
    assert not found, _report(found)


def test_only_the_hdf5_room_builds_a_dcpl():
    """'nothing above it builds a dcpl by hand': h5py's DATASET_CREATE list class is named only in ccp.hdf5."""
    found = _found("name", lambda module, name: room(module) != "ccp.hdf5" and name == "DATASET_CREATE")
    assert not found, _report(found)


# ------------------------------------------------------------------------------------------------ names
# Issue 26: ccp/store (the result store) and ccp/storage (object storage) were a letter apart; the sweep's
# "traced pass" was a third meaning of "trace" beside `ccp trace` and its trace folders (it is the counted pass).
RETIRED = re.compile(r"traced[\s_]+pass", re.IGNORECASE)


def _room_names(package: Path) -> list[str]:
    """The rooms directly under ``package``: its sub-packages (with an __init__.py) and its modules."""
    return sorted(p.name if p.is_dir() else p.stem for p in package.iterdir()
                  if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__"))


def _edits(a: str, b: str) -> int:
    """Letters to insert, delete or change to make ``a`` into ``b`` (Levenshtein)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def look_alike_rooms(package: Path) -> list[str]:
    """Pairs of rooms a reader takes for each other: two letters apart (store, storage), one if a name is short."""
    names = _room_names(package)
    return [f"{package.name}.{a} and {package.name}.{b} look alike" for i, a in enumerate(names) for b in names[i + 1:]
            if _edits(a, b) <= (2 if min(len(a), len(b)) >= 5 else 1)]


def retired_phrases(files: list[Path], root: Path = ROOT) -> list[str]:
    return [f"{path.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            for path in files for text in [path.read_text()] for m in RETIRED.finditer(text)]


def test_no_two_rooms_look_alike():
    found = look_alike_rooms(PACKAGE)
    assert not found, _report(found)


@pytest.mark.parametrize("rooms, found", [
    (["store", "storage"], ["ccp.storage and ccp.store look alike"]),
    (["run", "runs"], ["ccp.run and ccp.runs look alike"]),
    (["model", "modal"], ["ccp.modal and ccp.model look alike"]),
    (["store", "remote", "report", "repack", "run", "tune", "trace"], []),
], ids=["two-letters", "plural", "one-letter", "ccp-like"])
def test_checker_names_look_alike_rooms(tmp_path, rooms, found):
    package = _package(tmp_path, {f"{name}/__init__.py": "" for name in rooms})
    assert look_alike_rooms(package) == found


def test_the_sweeps_extra_pass_is_the_counted_pass():
    """'traced' is `ccp trace`'s word (a user's program, its trace folder); the sweep's pass under the log driver is
    the counted pass, in the code, its messages and the docs."""
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    found = retired_phrases(files)
    assert not found, _report(found)


@pytest.mark.parametrize("text, found", [
    ("one traced pass per cell", ["'traced pass'"]),
    ("x = traced_pass(job)", ["'traced_pass'"]),
    ("the Traced\n    passes", ["'Traced\\n    pass'"]),
    ("a traced program; the counted pass", []),
], ids=["words", "identifier", "across-lines", "ccp-trace-words"])
def test_checker_names_a_retired_phrase(tmp_path, text, found):
    module = tmp_path / "m.py"
    module.write_text(text)
    assert [f.split(": ", 1)[1] for f in retired_phrases([module], root=tmp_path)] == found
