"""The static memory analysis and the interpreter's profile agree on Triton's PTX too: the copy
and the stride-2 gather of tests/support/triton_memory_kernels.py (triton.compile for sm_80,
no GPU), launched on the interpreter at Triton's block (32 x num_warps threads) with the two
scratch pointers Triton appends; every figure the static analysis gives equals the profile's
(tests/support/memory_agreement.py compares)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from memory_agreement import agree

N = 2048
BLOCK = 1024     # elements per program (Triton's BLOCK), 4 warps: 128 threads


@pytest.mark.parametrize("name", ["copy", "strided"])
def test_triton_static_figures_equal_the_profile(name, tmp_path, monkeypatch):
    pytest.importorskip("triton", reason="the triton extra is not installed")
    from ptxforge.frontends.triton import compile_to_ptx

    import triton_memory_kernels as tmk

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ptx = compile_to_ptx(getattr(tmk, name), tmk.SIGNATURE, {"BLOCK": BLOCK}, num_warps=4,
                             target="sm_80")[0]
    x, y = np.arange(2 * N, dtype=np.float32), np.zeros(N, np.float32)
    scratch = [np.zeros(1, np.uint8), np.zeros(1, np.uint8)]   # Triton's scratch pointers
    compared = agree(ptx, name, N // BLOCK, 128, [x, y, N, *scratch], {})
    assert compared >= 2
    assert y.tolist() == (x[: N] if name == "copy" else x[::2]).tolist()   # it ran
