"""The examples in ptxforge's docstrings run and print what they say (doctest, every module)."""

from __future__ import annotations

import doctest
import importlib
import pathlib

import pytest

import ptxforge

PACKAGE = pathlib.Path(ptxforge.__file__).resolve().parent
MODULES = sorted(
    ".".join(("ptxforge",) + p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name):
        if test.examples and test.name.startswith(name):
            runner.run(test)
    failed, tried = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {tried} docstring examples in {name} failed (see above)"


def test_the_examples_are_many():
    finder = doctest.DocTestFinder(exclude_empty=True)
    count = sum(len(t.examples) for name in MODULES
                for t in finder.find(importlib.import_module(name), name))
    assert count >= 100
