"""The tool memo's NVRTC and nvcc entries (tests/support/tool_memo.py): a remembered compile is
the compile, a failing one is never remembered, and the key changes with every local header
the source includes (so an edited header is compiled again)."""

from __future__ import annotations

import pytest
import tool_memo

from ptxforge.frontends import cuda_source

SOURCE = '#include "scale.cuh"\n__global__ void k(float* x) { x[0] *= SCALE; }\n'


def test_a_remembered_nvrtc_compile_is_the_compile(tmp_path):
    (tmp_path / "scale.cuh").write_text("#define SCALE 3.0f\n")
    path = str(tmp_path / "k.cu")
    wrapped = cuda_source.compile_cuda
    assert getattr(wrapped, "_tool_memo", False)
    before = tool_memo.stats()
    first, again = (wrapped(SOURCE, path, "sm_80") for _ in range(2))
    after = tool_memo.stats()
    assert after["nvrtc_hits"] - before["nvrtc_hits"] >= 1
    assert first == again == wrapped.__wrapped__(SOURCE, path, "sm_80")


def test_the_key_follows_every_local_header(tmp_path):
    header = tmp_path / "scale.cuh"
    header.write_text('#include "inner.cuh"\n')
    (tmp_path / "inner.cuh").write_text("#define SCALE 3.0f\n")
    path = str(tmp_path / "k.cu")
    key = tool_memo._nvrtc_key(SOURCE, path, "sm_80", ())
    (tmp_path / "inner.cuh").write_text("#define SCALE 4.0f\n")     # two includes down
    edited = tool_memo._nvrtc_key(SOURCE, path, "sm_80", ())
    assert key and edited and key != edited
    assert tool_memo._nvrtc_key(SOURCE, path, "sm_80", ("-DX=1",)) != edited
    # an include the text does not name cannot be keyed: it is compiled every time
    assert tool_memo._nvrtc_key("#include HEADER\n", path, "sm_80", ()) is None
    assert tool_memo._nvrtc_key(SOURCE, path, "sm_80", ("-include", "x.h")) is None


def test_a_failing_compile_is_never_remembered(tmp_path):
    path = str(tmp_path / "bad.cu")
    before = tool_memo.stats()
    for _ in range(2):
        with pytest.raises(cuda_source.CudaSourceError, match="TILE"):
            cuda_source.compile_cuda("__global__ void k(int* x) { x[0] = TILE; }\n", path,
                                     "sm_80")
    after = tool_memo.stats()
    assert (after["nvrtc_runs"], after["nvrtc_hits"]) == (before["nvrtc_runs"],
                                                          before["nvrtc_hits"])
