"""ccp.hdf5 is a floor of its own: it imports only ccp.errors, ccp.units and ccp.chunkcache from ccp (function-local and
TYPE_CHECKING imports included), so every room above can use it and it can use none of them."""

import ast
from pathlib import Path

import pytest

import ccp

ROOM = Path(ccp.__file__).parent / "hdf5"
ALLOWED = ("ccp.errors", "ccp.units", "ccp.chunkcache", "ccp.hdf5")
MODULES = sorted(ROOM.rglob("*.py"))


def _ccp_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return [n for n in names if n == "ccp" or n.startswith("ccp.")]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOM)) for p in MODULES])
def test_imports_only_lower_floors(path):
    bad = [n for n in _ccp_imports(path) if not any(n == a or n.startswith(a + ".") for a in ALLOWED)]
    assert not bad, f"{path.relative_to(ROOM)} imports {bad}"


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOM)) for p in MODULES])
def test_no_module_over_600_lines(path):
    assert len(path.read_text().splitlines()) <= 600
