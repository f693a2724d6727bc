"""A numba-cuda kernel analysed without a GPU (``compile_ptx`` with lineinfo), on its Python lines.

Skipped with a reason only when numba-cuda is not installed.
"""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("numba.cuda", reason="the numba extra is not installed "
                                         "(pip install ptxforge[numba])")

from numba import float32  # noqa: E402

from ptxforge.errors import PtxforgeError  # noqa: E402
from ptxforge.frontends import numba as pnumba  # noqa: E402
from ptxforge.reports.figures import kernel_figures  # noqa: E402

import numba_kernels as nk  # noqa: E402

SIG = (float32[:], float32[:], float32[:])


@pytest.fixture(scope="module")
def stencil():
    return pnumba.analyze(nk.stencil9, SIG, target="sm_80", block=128)


def test_stencil_peak_names_its_python_lines(stencil):
    k = stencil.kernels[0]
    src, first = inspect.getsourcelines(nk.stencil9.py_func)
    path, last = inspect.getsourcefile(nk.stencil9.py_func), first + len(src) - 1
    assert "stencil9" in k.name and k.block_size == 128
    assert k.stats is not None and k.stats.registers > 0 and k.stats.spill_stores == 0
    groups = [g for g in k.pressure.peak.by_source if g.file is not None]
    assert groups and all(g.file == path and first <= g.line <= last for g in groups)
    # the taps t0..t8 are live together before the final expression: their lines hold values
    taps = {first + i for i, t in enumerate(src) if t.strip().startswith("t") and "=" in t}
    combine = next(first + i for i, t in enumerate(src) if "out[i] =" in t)
    assert {g.line for g in groups} & (taps | {combine})
    fig = kernel_figures(stencil)[0]
    assert fig.source is not None and fig.source[0] == path and first <= fig.source[1] <= last


def test_a_signature_string_and_a_plain_function_work_too():
    res = pnumba.analyze(nk.stencil9.py_func, "void(float32[:], float32[:], float32[:])",
                         compile=False)
    assert res.kernels[0].estimate.registers > 0 and res.kernels[0].stats is None


def test_a_typing_error_is_a_ptxforge_error():
    with pytest.raises(PtxforgeError, match="numba could not compile stencil9"):
        pnumba.analyze(nk.stencil9, (float32, float32, float32), compile=False)


def test_names_that_look_like_numba_escapes_read_as_written():
    """numba writes a character an identifier cannot hold as ``_XX`` (hex), but leaves ``_``
    alone: ``nb_2d`` stays ``nb_2d`` in the mangled name, and must not read as ``nb-``
    ('-' is 0x2d); a non-ASCII name (escaped as its UTF-8 bytes) reads as written."""
    from numba import cuda

    from ptxforge.ptx.demangle import display_name

    def nb_2d(out, x):
        out[0] = x[0]

    def mat_3e_3c(out, x):
        out[0] = x[0]

    def café(out, x):
        out[0] = x[0]

    for fn in (nb_2d, mat_3e_3c, café):
        res = pnumba.analyze(cuda.jit(fn), (float32[:], float32[:]), compile=False)
        k = res.kernels[0]
        assert display_name(k.name).endswith("." + fn.__qualname__), (k.name, display_name(k.name))
