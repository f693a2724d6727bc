"""The house's shape, as tests: wings import only downwards, no import cycle, no shadowed module.

The import graph is read from the source with ``ast`` (every ``import`` and ``from … import``,
inside functions too).  Imports under ``if TYPE_CHECKING:`` are left out: they are never
executed, and a renderer naming its report type for the type checker is not a dependency.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import subprocess
import sys

import networkx as nx
import pytest

import ptxforge

from package_modules import PACKAGE, package_modules
from source_trees import source, tree

#: What each part of the house may import (besides itself).  Lower wings never import higher
#: ones; nothing imports the CLI; only the front door (``__init__``) and the CLI sit on top.
ALLOWED = {
    "errors": set(),
    "_text": set(),
    "_parallel": set(),
    "arch": {"errors"},
    "ptx": {"errors", "arch"},
    "dsl": {"errors", "arch", "ptx"},
    "analysis": {"errors", "arch", "ptx", "_text"},
    "toolchain": {"errors", "arch", "ptx"},
    "reports": {"errors", "arch", "ptx", "analysis", "toolchain", "_text", "_parallel"},
    "emulator": {"errors", "arch", "ptx"},
    "launch": {"errors", "arch", "ptx", "toolchain", "emulator"},
    "testing": {"errors", "arch", "ptx", "dsl"},
    "frontends": {"errors", "arch", "ptx", "analysis", "toolchain", "reports", "_text",
                  "_parallel"},
    "cli": {"errors", "arch", "ptx", "dsl", "analysis", "toolchain", "reports", "launch",
            "frontends", "_text", "_parallel"},
    "__main__": {"cli"},
    "__init__": {"errors", "arch", "ptx", "dsl", "analysis", "toolchain", "reports", "launch"},
}


MODULES = package_modules()


def _type_checking_nodes(tree: ast.AST) -> set:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def import_edges(name: str, path: pathlib.Path) -> set[str]:
    """The ptxforge modules that module ``name`` imports (at any depth of its code)."""
    module = tree(path)
    skip = _type_checking_nodes(module)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(module):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in MODULES else stem
                       for alias in node.names]
        else:
            continue
        out.update(t for t in targets if t in MODULES and t != name)
    return out


@functools.cache
def import_graph() -> nx.DiGraph:
    """The package's import graph (built once per session; the tests only read it)."""
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        graph.add_node(name)
        graph.add_edges_from((name, dep) for dep in import_edges(name, path))
    return graph


def part(name: str) -> str:
    """The wing (or top-level module) a dotted module name belongs to."""
    pieces = name.split(".")
    return "__init__" if len(pieces) == 1 else pieces[1]


def test_the_graph_sees_imports_inside_functions():
    # cli commands import their reports lazily, inside functions; the graph must still see them
    assert "ptxforge.reports.analyze" in import_edges("ptxforge.cli.analyze",
                                                     MODULES["ptxforge.cli.analyze"])
    assert len(MODULES) > 60 and import_graph().number_of_edges() > 150


def test_no_import_cycle():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:5])


def test_wings_import_only_downwards():
    wrong = sorted(f"{a} imports {b}" for a, b in import_graph().edges
                   if part(b) != part(a) and part(b) not in ALLOWED[part(a)])
    assert not wrong, "\n".join(wrong)


def test_every_part_is_in_the_table():
    assert {part(name) for name in MODULES} == set(ALLOWED)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_is_what_its_name_says(name):
    module = importlib.import_module(name)
    assert module.__name__ == name
    obj = ptxforge
    for piece in name.split(".")[1:]:
        obj = getattr(obj, piece)
    assert obj is module, f"ptxforge{name[8:]} is {obj!r}, not the module (shadowed)"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_states_its_purpose_and_exports(name):
    module_tree = tree(MODULES[name])
    doc = ast.get_docstring(module_tree)
    assert doc and doc.strip(), f"{name} has no module docstring"
    leaf = name.rsplit(".", 1)[-1]
    if leaf.startswith("_") or name.endswith("__main__") or MODULES[name].name == "__init__.py":
        return
    exported = [n for n in module_tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert exported, f"{name} does not declare __all__"
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_no_module_over_600_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(source(path).splitlines())) > 600}
    assert not long, long


def test_the_top_level_is_small():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_the_public_api_is_curated_and_shadows_nothing():
    names = ptxforge.__all__
    assert len(names) == len(set(names)) and 30 <= len(names) <= 45
    assert all(hasattr(ptxforge, n) for n in names)
    submodules = {name.split(".")[1] for name in MODULES if name.count(".") >= 1}
    assert not submodules & set(names)
    # the names that used to shadow their own modules are the functions, and the modules are
    # reachable under their wing
    import ptxforge.ptx.parse as parse_module
    assert callable(ptxforge.parse) and parse_module.__name__ == "ptxforge.ptx.parse"


def test_import_ptxforge_loads_no_gpu_layer():
    code = ("import sys, ptxforge\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ptxforge.launch', "
            "'cuda.bindings.driver', 'cuda.core'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_type_checking_imports_name_what_exists():
    # left out of the graph above, so checked here: a renderer's type-only import must still
    # name a class its module defines (after a move, a stale one would go unnoticed)
    stale = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(tree(path)):
            if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
                continue
            for imp in (n for n in ast.walk(node) if isinstance(n, ast.ImportFrom)):
                base = package.split(".")[: len(package.split(".")) - imp.level + 1]
                module = importlib.import_module(".".join(base + [imp.module]) if imp.level
                                                 else imp.module)
                stale += [f"{name}: {module.__name__}.{a.name}" for a in imp.names
                          if not hasattr(module, a.name)]
    assert not stale, stale
