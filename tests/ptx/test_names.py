"""Names as users write them, in the library as in the CLI: ``compile_ptx(...)[name]``,
``load(...)[name]`` and ``module.kernel(name)`` take the mangled name, the demangled one or an
unambiguous prefix (one lookup, :mod:`ptxforge.ptx.names`); numba kernels read as their
Python name.  NVRTC compiles the sources here; ptxas and the emulator are real.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptxforge
from ptxforge.errors import KernelNameError, LaunchError, PtxforgeError
from ptxforge.ptx.demangle import display_name, numba_name
from ptxforge.ptx.names import lookup, match_kernel

from corpus_util import compile_cu, corpus_ptx

SCALE = """
template <int N> __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + N;
}
template __global__ void scale<1>(float*, float, int);
template __global__ void scale<2>(float*, float, int);
__global__ void sgemm_reg(float* c, const float* a, int n) {
    int i = threadIdx.x;
    if (i < n) c[i] += a[i] * a[i];
}
"""


@pytest.fixture(scope="module")
def ptx():
    return compile_cu(SCALE, "scale", "sm_80")


def test_compile_ptx_takes_names_as_users_write_them(ptx):
    c = ptxforge.compile_ptx(ptx, "sm_80")
    mangled = {display_name(k.name): k.name for k in c.kernels}
    assert set(mangled) == {"scale<1>", "scale<2>", "sgemm_reg"}
    for shown, name in mangled.items():
        assert c[shown] is c[name] and c[shown].name == name
    assert c["sgemm"].name == mangled["sgemm_reg"]                  # a prefix
    assert c["void scale<2>(float*, float, int)"].name == mangled["scale<2>"]
    with pytest.raises(KernelNameError, match="ambiguous.*scale<1>.*scale<2>") as info:
        c["scale"]
    assert isinstance(info.value, KeyError) and isinstance(info.value, PtxforgeError)
    with pytest.raises(KeyError, match="no kernel named 'gemm'"):
        c["gemm"]


def test_load_and_kernel_take_the_same_names(ptx):
    mod = ptxforge.load(ptx, device="emulator")
    x = np.arange(8, dtype=np.float32)
    mod.kernel("scale<2>")(x, np.float32(3), np.int32(8), grid=1, block=8)
    np.testing.assert_array_equal(x, 3 * np.arange(8, dtype=np.float32) + 2)
    a = np.full(4, 2, np.float32)
    c = np.ones(4, np.float32)
    mod["sgemm"](c, a, np.int32(4), grid=1, block=4)
    np.testing.assert_array_equal(c, np.full(4, 5, np.float32))
    assert "sgemm_reg" in mod and "scale<1>" in mod and "scale" not in mod
    with pytest.raises(LaunchError, match="ambiguous"):
        mod.kernel("scale")
    with pytest.raises(LaunchError, match="no kernel named 'gemm'"):
        mod["gemm"]


def test_the_cli_and_the_library_share_the_lookup(capsys, tmp_path):
    from cli_util import run

    ptx = corpus_ptx("templates", "sm_80")
    path = tmp_path / "t.ptx"
    path.write_text(ptx)
    names = [k.name for k in ptxforge.compile_ptx(ptx, "sm_80").kernels]
    for wanted in ("map2<int", "dot_block<128>", "map2<double,Saxpy<double>>"):
        found = match_kernel(names, wanted)
        assert lookup(names, wanted) == found
        assert ptxforge.compile_ptx(ptx, "sm_80")[wanted].name == found
        code, out, err = run(capsys, "analyze", path, "--kernel", wanted, "--no-compile",
                             "--json")
        assert code == 0, err
        import json

        assert [k["name"] for k in json.loads(out)["kernels"]] == [found]


def test_numba_kernels_read_as_their_python_name():
    pytest.importorskip("numba.cuda", reason="the numba extra is not installed")
    from numba import float32

    from ptxforge.frontends import numba as pnumba

    import numba_kernels as nk

    res = pnumba.analyze(nk.stencil9, (float32[:], float32[:], float32[:]), compile=False)
    k = res.kernels[0]
    py = nk.stencil9.py_func
    assert numba_name(k.name) == f"{py.__module__}.{py.__qualname__}"
    assert display_name(k.name) == f"{py.__module__}.{py.__qualname__}"
    assert "[abi:" not in res.to_text() and f"{py.__module__}.{py.__qualname__}" in res.to_text()
    assert match_kernel([k.name], "stencil9") == k.name
    assert numba_name("_Z3fooPf") is None and numba_name("k_simple") is None
