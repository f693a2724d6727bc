"""The map matches the house: ``docs/architecture.md`` names every module file of ptxforge."""

from __future__ import annotations

import pathlib

from package_modules import PACKAGE, package_modules

DOC = PACKAGE.parent / "docs" / "architecture.md"


def _named(text: str, dotted: str, path: pathlib.Path) -> bool:
    """Whether ``text`` names the module: its dotted name or its path (under ``ptxforge/`` or
    from the repository root), in backticks."""
    rel = path.relative_to(PACKAGE).as_posix()
    return any(f"`{name}`" in text for name in (dotted, rel, f"ptxforge/{rel}"))


def test_every_module_is_named_in_the_architecture_doc():
    text = DOC.read_text(encoding="utf-8")
    missing = [dotted for dotted, path in package_modules().items()
               if not _named(text, dotted, path)]
    assert not missing, (f"docs/architecture.md does not name {len(missing)} module(s) "
                         f"(add a row to its 'Every module' table): {missing}")


def test_the_doc_names_no_module_that_is_gone():
    # a row of the module table whose file was removed or renamed is drift too
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("## Every module"):]
    rows = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    gone = [r for r in rows if not (PACKAGE / r).is_file()]
    assert rows and not gone, gone
