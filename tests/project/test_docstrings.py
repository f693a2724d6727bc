"""The examples in ptxforge's docstrings run and print what they say (doctest, every module)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from package_modules import package_modules

MODULES = sorted(name for name in package_modules() if not name.endswith("__main__"))


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
