"""The disk memo of test-side results (tests/support/content_memo.py) answers what the
computation answers: a second call with the same key is read back, any change of the key
(an input, a support file, the package) computes again, and ``PTXFORGE_TOOL_CACHE=off``
computes every time."""

from __future__ import annotations

from pathlib import Path

import content_memo


def test_a_result_is_computed_once_then_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXFORGE_CORPUS_CACHE", str(tmp_path))
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "disk")
    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return {"v": [value, "x"]}
        return run

    assert content_memo.remembered("t", ("a", 1), compute(1)) == {"v": [1, "x"]}
    assert content_memo.remembered("t", ("a", 1), compute(2)) == {"v": [1, "x"]}   # kept
    assert content_memo.remembered("t", ("a", 2), compute(3)) == {"v": [3, "x"]}   # new input
    assert content_memo.remembered("t", ("a", 1), compute(4),
                                   support=("content_memo.py",)) == {"v": [4, "x"]}
    assert content_memo.remembered("t", ("a", 1), compute(5), package=False) == {"v": [5, "x"]}
    assert calls == [1, 3, 4, 5]
    assert len(list((tmp_path / "memo" / "t").glob("*.json"))) == 4


def test_a_failing_computation_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXFORGE_CORPUS_CACHE", str(tmp_path))
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "disk")

    def fail():
        raise RuntimeError("no")

    for _ in range(2):
        try:
            content_memo.remembered("t", ("f",), fail)
        except RuntimeError:
            pass
        else:  # pragma: no cover
            raise AssertionError("the failure was remembered")
    assert not (tmp_path / "memo" / "t").exists()


def test_off_computes_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXFORGE_CORPUS_CACHE", str(tmp_path))
    monkeypatch.setenv("PTXFORGE_TOOL_CACHE", "off")
    calls = []
    for i in range(2):
        content_memo.remembered("t", ("a",), lambda i=i: calls.append(i))
    assert calls == [0, 1] and not (tmp_path / "memo").exists()


def test_the_remembered_catalogue_probe_is_the_probe():
    from ptxforge.testing import ops

    assert getattr(ops._probe, "_content_memo", False)   # installed by tests/conftest.py
    assert ops._probe("sm_70") == ops._probe.original("sm_70")


def test_another_checkout_of_the_same_code_has_entries_of_its_own(tmp_path):
    """A remembered result may quote the package's paths (the catalogue probe's refusals name
    ptxforge/testing/ops.py): a copy of the same files elsewhere must not read them."""
    import shutil

    import ptxforge

    root = Path(ptxforge.__file__).resolve().parent
    copy = tmp_path / "ptxforge"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert content_memo.tree_digest(copy) != content_memo.tree_digest(root)
    assert content_memo.tree_digest(root) == content_memo.package_digest()


def test_a_result_that_quotes_no_path_is_shared_by_every_checkout(tmp_path):
    """``located=False``: the key has the package's files (path in the package, text), not
    where the package is; a change to one file still makes a new key."""
    import shutil

    import ptxforge

    root = Path(ptxforge.__file__).resolve().parent
    copy = tmp_path / "ptxforge"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert content_memo.tree_digest(copy, located=False) == content_memo.tree_digest(
        root, located=False) == content_memo.package_digest(located=False)
    assert content_memo.tree_digest(root, located=False) != content_memo.tree_digest(root)
    errors = copy / "errors.py"
    errors.write_text(errors.read_text() + "\n")
    assert content_memo.tree_digest(copy, located=False) != content_memo.tree_digest(
        root, located=False)
