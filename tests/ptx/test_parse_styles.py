"""PTX in the styles of LLVM NVPTX front ends (Triton, Julia) parses, analyses and round-trips."""

from pathlib import Path

import pytest

from ptxforge import analyze_pressure, compile_ptx, emit, parse

STYLES = Path(__file__).parents[1] / "data" / "styles"


def test_triton_style_parses_with_source_lines_and_vector_loads():
    m = parse((STYLES / "triton_style.ptx").read_text(), "triton_style.ptx")
    (k,) = m.entries
    assert k.name == "add_kernel" and dict(k.directives)[".reqntid"] == (128, 1, 1)
    load = next(i for i in k.instructions if i.opcode == "ld.global.b32")
    assert load.guard is not None and [r.name for r in load.defs] == ["%r3"]
    assert [r.name for r in load.uses] == ["%rd1", "%p1"]
    assert str(load.loc) == "add.py:12"
    store = next(i for i in k.instructions if i.opcode == "st.global.b32")
    assert store.defs == () and {r.name for r in store.uses} == {"%rd2", "%r4", "%p1"}


def test_julia_style_parses_stack_registers_and_call_sequences():
    m = parse((STYLES / "julia_style.ptx").read_text(), "julia_style.ptx")
    (k,) = m.entries
    prototype = next(f for f in m.kernels if f.name == "vprintf")
    assert prototype.body is None and len(prototype.params) == 2
    names = {r.name for i in k.instructions for r in i.defs}
    assert {"%SP", "%SPL", "%r2"} <= names
    call = next(i for i in k.instructions if i.family == "call")
    assert call.defs == ()  # the result goes to a .param, then ld.param into %r2
    assert analyze_pressure(k).peak.units >= 6


@pytest.mark.parametrize("name,arch,backend", [("triton_style", "sm_90a", "nvjitlink"),
                                               ("julia_style", "sm_70", "ptxas")])
def test_styles_round_trip_to_the_same_ptxas_figures(name, arch, backend):
    from ptxforge.toolchain.compile import backend_status

    if backend == "ptxas" and not backend_status().get("ptxas", (False,))[0]:
        pytest.skip("no ptxas executable for sm_70 (pip install nvidia-cuda-nvcc-cu12)")
    text = (STYLES / f"{name}.ptx").read_text()
    module = parse(text, f"{name}.ptx")
    kernel = module.entries[0].name
    original = compile_ptx(text, arch, backend=backend)[kernel]
    again = compile_ptx(emit(module), arch, backend=backend)[kernel]
    assert (again.registers, again.spill_stores, again.stack_frame) == \
        (original.registers, original.spill_stores, original.stack_frame)
    assert emit(parse(emit(module))) == emit(module)
