"""The kernel corpus (tests/support/kernel_corpus.py): size, sources, splits, ptxas ground truth."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_corpus import SOURCES, corpus, ground_truth, ground_truths, split_of

pytest.importorskip("triton", reason="the corpus's Triton kernels need the triton wheel")
pytest.importorskip("numba.cuda", reason="the corpus's numba kernels need numba-cuda")


@pytest.fixture(scope="module")
def kernels():
    return corpus("sm_80")


@pytest.fixture(scope="module")
def truths(kernels):
    return ground_truths(kernels)


def test_corpus_is_big_and_from_three_compilers(kernels):
    by_source = collections.Counter(k.source for k in kernels)
    assert len(kernels) >= 300, by_source
    assert set(by_source) == set(SOURCES)
    assert by_source["nvrtc"] >= 200 and by_source["triton"] >= 40 and by_source["numba"] >= 35


def test_ids_are_unique_and_name_their_file(kernels):
    ids = [k.id for k in kernels]
    assert len(set(ids)) == len(ids)
    for k in kernels:
        assert k.id.startswith(f"{k.source}/{Path(k.file).name}:"), k.id
        assert k.arch == "sm_80"
        assert f".entry {k.kernel}(" in k.ptx, k.id


def test_both_splits_in_every_source_near_65_35(kernels):
    for source in SOURCES:
        splits = collections.Counter(k.split for k in kernels if k.source == source)
        assert splits["train"] > 0 and splits["validation"] > 0, (source, splits)
    share = sum(k.split == "train" for k in kernels) / len(kernels)
    assert 0.55 <= share <= 0.75, share


def test_split_depends_on_the_id_alone(kernels):
    assert all(k.split == split_of(k.id) for k in kernels)
    # pinned: a change to the hash would silently move kernels between train and validation
    assert [split_of(f"k{i}") for i in range(6)] == [
        "validation", "validation", "validation", "train", "train", "train"]


def test_every_kernel_is_accepted_by_whole_program_ptxas(kernels, truths):
    assert set(truths) == {k.id for k in kernels}
    for k in kernels:
        t = truths[k.id]
        assert 1 <= t.registers <= 255, (k.id, t)
        assert t.mode == "whole-program" and t.tool.startswith("ptxas 13."), t


def test_ground_truth_values_follow_the_sources(truths):
    hist = truths["nvrtc/atomics.cu:histogram256"]
    assert hist.shared == 1024 and hist.barriers == 1
    # wider register tiles need more registers (template instantiations of one kernel)
    small, big = (truths[f"nvrtc/sgemm.cu:sgemm_regtile<{t}>"] for t in ("64,64,8,4,4", "128,128,8,8,8"))
    assert big.registers > small.registers


def test_whole_program_charges_the_callees_to_the_kernel(kernels):
    """ptxas 13.5 on call_chain: whole-program 30 registers and a 40-byte frame (the
    non-inlined callee's are folded in); relocatable (-c) 24 registers and no frame."""
    k = next(k for k in kernels if k.id == "nvrtc/calls.cu:call_chain")
    whole, reloc = ground_truth(k), ground_truth(k, relocatable=True)
    assert (whole.mode, reloc.mode) == ("whole-program", "relocatable")
    assert whole.registers > reloc.registers and whole.stack > reloc.stack == 0


def test_warm_corpus_imports_no_compiler(kernels, tmp_path):
    """A second process reads every module from the disk cache (no Triton, no numba)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kernel_corpus as kc; "
            "n = len(kc.corpus('sm_80')); "
            "print(n, 'triton' in sys.modules, 'numba' in sys.modules)")
    support = str(Path(__file__).resolve().parents[1] / "support")
    out = subprocess.run([sys.executable, "-c", code, support], capture_output=True, text=True,
                         env=dict(os.environ), timeout=600, check=True).stdout.split()
    assert out == [str(len(kernels)), "False", "False"]
