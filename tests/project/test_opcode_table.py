"""No module outside the opcode table (ptxforge/ptx/opcodes.py) keeps a set of opcode families.

Every literal collection of strings in the package is read (AST); one that names two or more
opcode families of :data:`ptxforge.ptx.opcodes.FAMILIES` fails the test when it is

* bound to a name at module or class level (a table of its own: ``TERMINATORS = (...)``),
* a set or frozenset (``{"bra", "ret"}``, ``frozenset(...)``) anywhere, or
* any literal whose families share a trait of the table (``x in ("ret", "exit")``: a copy of
  the Terminator trait).

Words that the table also uses as modifiers (``and``, ``or``, ``add``, ``min`` are atom/red
operations too) are ambiguous and not counted; ``__all__`` lists are not tables.  Inline
dispatch on arithmetic families with no trait in common (the emulator's ``("fma", "mad")``)
is an implementation's choice, not a second table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ptxforge
from ptxforge.ptx.opcodes import FAMILIES

from source_trees import tree as source_tree

ROOT = Path(ptxforge.__file__).parent
TABLE = ROOT / "ptx" / "opcodes.py"
_MODIFIER_WORDS = frozenset().union(*(row.modifiers for row in FAMILIES.values()))
NAMES = frozenset(FAMILIES) - _MODIFIER_WORDS


def _strings(node: ast.AST) -> list | None:
    """The strings of a literal collection (or of ``"a b c".split()``), else None."""
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "split" and isinstance(node.func.value, ast.Constant)
            and isinstance(node.func.value.value, str)):
        return node.func.value.value.split()
    return None


def _share_trait(names: list) -> bool:
    traits = [set(FAMILIES[n].traits) for n in names]
    return bool(set.intersection(*traits))


def _offences(path: Path) -> list:
    tree = source_tree(path)
    top_level, exports = set(), set()
    for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        for stmt in scope.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                exported = any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)
                for node in ast.walk(stmt):
                    (exports if exported else top_level).add(id(node))
    out = []
    for node in ast.walk(tree):
        if id(node) in exports:
            continue
        strings = _strings(node)
        if strings is None:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("set", "frozenset") and node.args):
                strings = _strings(node.args[0])
                if strings is not None and id(node.args[0]) not in top_level:
                    top_level.add(id(node.args[0]))  # a set: counted like a table
            continue
        names = [s for s in strings if s in NAMES]
        if len(names) < 2:
            continue
        if id(node) in top_level or isinstance(node, ast.Set) or _share_trait(names):
            out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {sorted(set(names))}")
    return out


def test_no_module_outside_the_table_lists_opcode_families():
    offences = []
    for path in sorted(ROOT.rglob("*.py")):
        if path != TABLE:
            offences.extend(_offences(path))
    assert not offences, ("opcode families listed outside ptxforge/ptx/opcodes.py (ask the "
                          "table by trait instead):\n" + "\n".join(offences))


def test_the_check_finds_a_copy(tmp_path):
    """The scan itself works: each kind of copy is found, an __all__ or a modifier list not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        '__all__ = ["bra", "ret"]\n'
        'STOPS = ("bra", "ret")\n'
        'def f(x):\n'
        '    a = x in {"ld", "st"}\n'
        '    b = x in ("ret", "exit")\n'
        '    c = x in ("and", "or", "xor")\n'
        '    return frozenset(("ldu", "atom")), a, b, c\n')
    found = [line.split(":")[1] for line in _offences_rel(probe)]
    assert found == ["2", "4", "5", "7"]


def _offences_rel(path: Path) -> list:
    global ROOT
    saved, ROOT = ROOT, path.parent.parent
    try:
        return _offences(path)
    finally:
        ROOT = saved
