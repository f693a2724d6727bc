"""Hypothesis profiles govern every property: no test pins its own example count.

A literal ``@settings(max_examples=300)`` keeps the ``thorough`` profile from raising it (and
the ``quick`` one from lowering it).  A costly property scales the profile's count instead:
``max_examples=examples(0.2)`` (tests/support/hypothesis_profiles.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_trees import tree as source_tree

TESTS = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> list[str]:
    tree = source_tree(path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) \
                == "settings":
            for kw in node.keywords:
                if kw.arg == "max_examples" and isinstance(kw.value, ast.Constant):
                    out.append(f"{path.relative_to(TESTS)}:{node.lineno}: max_examples="
                               f"{kw.value.value}")
    return out


def test_no_property_pins_its_example_count():
    pins = [pin for path in sorted(TESTS.rglob("*.py")) for pin in _pins(path)
            if "hypothesis_profiles" not in path.name]
    assert pins == [], "use max_examples=examples(scale) so the profile governs:\n" + \
        "\n".join(pins)


def test_the_check_sees_a_pin(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from hypothesis import settings\n"
                      "@settings(max_examples=300)\ndef t(): pass\n")
    global TESTS
    saved, TESTS = TESTS, tmp_path
    try:
        assert _pins(sample) == ["test_sample.py:2: max_examples=300"]
    finally:
        TESTS = saved


def test_derandomized_examples_do_not_depend_on_the_loaded_modules(tmp_path, monkeypatch):
    """A derandomized property draws the same examples however many of the project's modules
    are loaded (hypothesis harvests "local constants" from them; hypothesis_profiles turns
    that pool off under a derandomized profile): a module full of new constants, imported
    between two runs of one property, changes nothing."""
    import sys

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hypothesis_profiles import examples

    drawn: list = []

    @settings(derandomize=True, database=None, max_examples=examples(0.5))
    @given(st.lists(st.integers(), max_size=8), st.text(max_size=6))
    def prop(xs, s):
        drawn.append((tuple(xs), s))

    profile = settings.get_current_profile_name()
    settings.load_profile("default")     # derandomized (under any --hypothesis-profile)
    try:
        prop()
        first, drawn[:] = list(drawn), []
        _import_many_constants(tmp_path, monkeypatch)
        prop()
    finally:
        sys.modules.pop("many_constants_mod", None)
        settings.load_profile(profile)
    assert drawn == first


def _import_many_constants(tmp_path, monkeypatch) -> None:
    """Import a new local module that holds 800 constants no other module has."""
    import importlib

    (tmp_path / "many_constants_mod.py").write_text(
        "TABLE = (" + ", ".join(str(987_654_000 + i) for i in range(400)) + ")\n"
        "NAMES = (" + ", ".join(f"'name_{i}_x'" for i in range(400)) + ")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("many_constants_mod")
