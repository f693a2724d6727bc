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
