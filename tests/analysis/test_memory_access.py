"""Static memory analysis on kernels written here: DSL, CUDA C++ through NVRTC, Triton.

Each kernel has a known per-warp figure (a naive transpose's stores touch 32 sectors, a
coalesced copy 4, a stride of 2 floats 8, a broadcast 1; a 32x32 float tile read by column is
32-way, padded to 33 columns 1-way); the fixes are re-analysed and must reach 1-way / the
coalesced sector count.
"""

from __future__ import annotations

import warnings

import pytest

from ptxforge.analysis.address_eval import AddressEvaluator
from ptxforge.analysis.affine import Affine, NotAffine
from ptxforge.analysis.memory_access import analyze_memory, kernel_block
from ptxforge.analysis.memory_fixes import padded, swizzle_name
from ptxforge.analysis.warp_access import global_sectors, local_sectors, shared_banks
from ptxforge.ptx.parse import parse

import memory_builders as mk


def _only(report, space, direction):
    (got,) = [a for a in report.accesses if a.space == space and a.direction == direction]
    return got


# --- the warp rules ---------------------------------------------------------------------------

@pytest.mark.parametrize("stride, width, sectors", [(4, 4, 4), (8, 4, 8), (128, 4, 32),
                                                    (0, 4, 1), (8, 8, 8), (16, 16, 16),
                                                    (2, 2, 2), (4096, 4, 32)])
def test_sectors_per_request_by_stride_and_width(stride, width, sectors):
    assert global_sectors([stride * lane for lane in range(32)], width) == sectors


@pytest.mark.parametrize("stride, width, ways, wavefronts", [
    (4, 4, 1, 1), (128, 4, 32, 32), (132, 4, 1, 1), (8, 4, 2, 2), (0, 4, 1, 1),
    (64, 4, 16, 16), (8, 8, 1, 2), (16, 8, 2, 4), (16, 16, 1, 4), (32, 16, 2, 8)])
def test_bank_ways_and_wavefronts(stride, width, ways, wavefronts):
    assert shared_banks([stride * lane for lane in range(32)], width) == (ways, wavefronts)


def test_same_word_is_a_broadcast_not_a_conflict():
    # lanes 0..15 read word 0, lanes 16..31 word 32 (same bank, another word): 2-way
    assert shared_banks([0] * 16 + [128] * 16, 4) == (2, 2)
    assert shared_banks([0, 1, 2, 3] * 8, 1) == (1, 1)


def test_local_memory_is_interleaved_across_the_warp():
    assert local_sectors([0] * 32, 4) == 4 and local_sectors([0] * 32, 8) == 8


# --- the affine evaluator ------------------------------------------------------------------------

def test_affine_arithmetic_and_printing():
    t, c = Affine.symbol("tid.x"), Affine.symbol("ctaid.x")
    v = t.scale(4) + c.scale(1024) + Affine.const(8)
    assert str(v) == "4*tid.x + 1024*ctaid.x + 8"
    assert isinstance(t.times(t), NotAffine) and not v.uniform and c.uniform


_LOOP = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 A, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [A];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %r2;
$L1:
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    cvt.rzi.u32.f32 %r4, %f1;
    mul.wide.u32 %rd5, %r4, 4;
    st.global.u32 [%rd5], %r4;
    add.u32 %r3, %r3, 256;
    setp.lt.u32 %p1, %r3, %r1;
    @%p1 bra $L1;
    ret;
}
""".replace(".reg .b64 %rd<6>;", ".reg .b64 %rd<6>;\n    .reg .f32 %f<2>;")


def test_a_loop_counter_is_loop_carried_and_a_loaded_index_is_data_dependent():
    k = parse(_LOOP).kernel("k")
    rep = analyze_memory(k)
    load = _only(rep, "global", "load")
    assert load.address == "4*tid.x + 4*%r3 + A" and load.sectors_per_request == 4.0
    store = _only(rep, "global", "store")
    assert store.sectors_per_request is None and store.address is None
    assert store.reason.startswith("data-dependent") and "%f1" in store.reason
    assert "loaded from global memory" in store.reason


def test_a_thread_dependent_loop_step_is_not_affine():
    k = parse(_LOOP.replace("add.u32 %r3, %r3, 256;", "add.u32 %r3, %r3, %r2;")).kernel("k")
    load = _only(analyze_memory(k), "global", "load")
    assert load.sectors_per_request is None and "written more than once" in load.reason


def test_a_copy_of_a_loop_counter_through_mov_is_loop_carried():
    # NVRTC's loop shape: the counter %r9 is read through a copy %r5 made each iteration
    text = _LOOP.replace("    mov.u32 %r3, %r2;\n$L1:\n", "    mov.u32 %r9, %r2;\n$L1:\n"
                         "    mov.u32 %r3, %r9;\n").replace(
        "add.u32 %r3, %r3, 256;", "add.u32 %r9, %r3, 256;").replace(
        "setp.lt.u32 %p1, %r3, %r1;", "setp.lt.u32 %p1, %r9, %r1;").replace(
        "%r<8>", "%r<10>")
    load = _only(analyze_memory(parse(text).kernel("k")), "global", "load")
    assert load.sectors_per_request == 4.0 and load.address == "4*tid.x + 4*%r9 + A"


def test_a_non_affine_thread_index_is_counted_per_thread():
    rep = analyze_memory(mk.octets().kernel("octets"))
    read = _only(rep, "shared", "load")
    assert read.address is None and read.reason.startswith("not affine")
    assert (read.ways, read.wavefronts_per_request) == (8, 8.0)
    assert _only(rep, "global", "store").sectors_per_request == 4.0


_BRANCHY = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 A)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<5>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [A];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0;
    setp.lt.u32 %p1, %tid.x, LIMIT;
    @%p1 bra $L1;
    mov.u32 %r1, 512;
$L1:
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u32 %r1, %tid.x;
    ret;
}
"""


def test_a_register_set_under_a_thread_dependent_branch_is_data_dependent():
    load = _only(analyze_memory(parse(_BRANCHY.replace("LIMIT", "16")).kernel("k")),
                 "global", "load")
    assert load.sectors_per_request is None and "thread-dependent branch" in load.reason
    # the same branch on a uniform value: one value per warp (the later write of %r1, the
    # thread index, does not reach the load: reaching definitions)
    text = _BRANCHY.replace("%tid.x, LIMIT", "%ctaid.x, 16")
    load = _only(analyze_memory(parse(text).kernel("k")), "global", "load")
    assert load.sectors_per_request == 1.0 and load.address == "4*%r1 + A"


def test_the_octree_stack_in_local_memory_is_data_dependent():
    from ptxforge.frontends.cuda_source import compile_cuda

    from compile_sources import OCTREE_WALK

    k = parse(compile_cuda(OCTREE_WALK, "octree.cu", "sm_80")).kernel("walk")
    rep = analyze_memory(k, block=128)
    local = [a for a in rep.accesses if a.space == "local"]
    pushed = [a for a in local if a.sectors_per_request is None]
    assert pushed and all("thread-dependent branch" in a.reason for a in pushed)
    # the first push (todo[0] = 0) is at the same offset in every thread: interleaved
    assert any(a.sectors_per_request == 4.0 for a in local)


def test_a_parameter_stride_has_figures_once_given_a_value():
    from ptxforge.dsl import kernels

    k = kernels.sgemm_tiled().kernel("sgemm_tiled")
    glob = [a for a in analyze_memory(k, block=None).accesses if a.space == "global"]
    assert len(glob) == 3 and all(a.sectors_per_request is None and "depends on" in a.reason
                                  for a in glob)
    # block 16x16: a warp is two rows of 16 floats, K (N) floats apart: 2 x 64 bytes
    glob = [a for a in analyze_memory(k, block=None, params={"K": 1024, "N": 512}).accesses
            if a.space == "global"]
    assert [(a.direction, a.sectors_per_request) for a in glob] == [
        ("load", 4.0), ("load", 4.0), ("store", 4.0)]
    with pytest.raises(Exception, match="no parameter Q"):
        analyze_memory(k, params={"Q": 1})


def test_block_defaults_to_the_launch_bounds():
    assert kernel_block(mk.shared_tile().kernel("tile")) == (32, 32, 1)
    assert kernel_block(mk.copy().kernel("copy")) == (256, 1, 1)
    assert kernel_block(mk.copy().kernel("copy"), (32, 4)) == (32, 4, 1)


def test_ntid_is_the_block_size_and_a_unit_dimension_is_zero():
    k = mk.copy().kernel("copy")
    ev = AddressEvaluator(k, (128, 1, 1))
    from ptxforge.ptx import ir
    assert ev.operand_value(ir.SpecialReg("%ntid.x")) == Affine.const(128)
    assert ev.operand_value(ir.SpecialReg("%tid.y")) == Affine.const(0)


# --- DSL kernels -------------------------------------------------------------------------------

def test_naive_transpose_stores_are_32_sectors_and_the_fix_coalesces_them():
    rep = analyze_memory(mk.transpose_naive().kernel("transpose_naive"), block=None)
    assert rep.block == (32, 8, 1)
    load, store = _only(rep, "global", "load"), _only(rep, "global", "store")
    assert load.sectors_per_request == 4.0 and store.sectors_per_request == 32.0
    assert store.address.startswith(f"{4 * mk.N}*tid.x + 4*tid.y")
    assert rep.worst_first()[0] is store
    (fix,) = rep.fixes
    assert fix.kind == "coalesce" and fix.index == store.index
    assert (fix.before, fix.after) == (32.0, 4.0) and "threadIdx.y" in fix.text


def test_coalesced_copy_is_4_sectors():
    rep = analyze_memory(mk.copy().kernel("copy"))
    assert [a.sectors_per_request for a in rep.accesses] == [4.0, 4.0]
    assert [a.direction for a in rep.accesses] == ["load", "store"] and not rep.fixes


def test_stride_2_is_8_sectors_and_the_fix_gives_4():
    rep = analyze_memory(mk.strided(2).kernel("strided"))
    assert _only(rep, "global", "load").sectors_per_request == 8.0
    assert [(f.kind, f.before, f.after) for f in rep.fixes] == [("coalesce", 8.0, 4.0)]
    rep4 = analyze_memory(mk.strided(4).kernel("strided"))
    assert _only(rep4, "global", "load").sectors_per_request == 16.0


def test_broadcast_is_one_sector_and_one_way():
    rep = analyze_memory(mk.broadcast().kernel("broadcast"))
    g = _only(rep, "global", "load")
    s = _only(rep, "shared", "load")
    assert g.sectors_per_request == 1.0 and g.address == "x"
    assert (s.ways, s.wavefronts_per_request) == (1, 1.0)


def test_shared_tile_column_read_is_32_way_and_padding_makes_it_1_way():
    rep = analyze_memory(mk.shared_tile().kernel("tile"), block=None)
    read, write = _only(rep, "shared", "load"), _only(rep, "shared", "store")
    assert (read.ways, read.wavefronts_per_request) == (32, 32.0)
    assert (write.ways, write.wavefronts_per_request) == (1, 1.0)
    fixes = {f.kind: f for f in rep.fixes}
    assert set(fixes) == {"padding", "swizzle"}
    assert all(f.index == read.index and f.before == 32.0 and f.after == 1.0
               for f in fixes.values())
    assert "Swizzle<5,2,5>" in fixes["swizzle"].text and "[33]" in fixes["padding"].text
    padded_rep = analyze_memory(mk.shared_tile(pad=1).kernel("tile_pad"), block=None)
    read = _only(padded_rep, "shared", "load")
    assert (read.ways, read.wavefronts_per_request) == (1, 1.0) and not padded_rep.fixes
    # the padding the fix proposes is the address the padded kernel computes
    assert fixes["padding"].address.split(" + tile")[0] == read.address.split(" + tile")[0]


def test_padding_and_swizzle_helpers():
    form = Affine.of({("tid.x",): 128, ("tid.y",): 4})
    assert str(padded(form, 128)) == "132*tid.x + 4*tid.y"
    assert swizzle_name(128, 4) == "Swizzle<5,2,5>" and swizzle_name(256, 16) == "Swizzle<3,4,4>"


def test_a_warp_of_two_16_thread_rows_halves_the_conflict():
    form_rep = analyze_memory(mk.shared_tile().kernel("tile"), block=(16, 16))
    read = _only(form_rep, "shared", "load")
    # 16 x 16 block: a warp is 2 rows of 16; the column read strides 128 bytes: 16-way
    assert read.ways == 16


# --- CUDA C++ through NVRTC ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_module():
    from ptxforge.frontends.cuda_source import compile_cuda

    return parse(compile_cuda(mk.CUDA_TRANSPOSES, "transposes.cu", "sm_80"), "transposes.ptx")


def test_nvrtc_naive_transpose_store_at_its_source_line(cuda_module):
    rep = analyze_memory(cuda_module.kernel("naive"), block=(32, 8))
    store = _only(rep, "global", "store")
    load = _only(rep, "global", "load")
    assert store.line == mk.CUDA_LINES("STORE_NAIVE") and store.file.endswith("transposes.cu")
    assert load.line == mk.CUDA_LINES("LOAD_NAIVE")
    assert (store.sectors_per_request, load.sectors_per_request) == (32.0, 4.0)
    assert rep.by_line()[0].line == store.line


def test_nvrtc_tiled_transpose_conflict_and_padding(cuda_module):
    bad = analyze_memory(cuda_module.kernel("tiled_conflict"), block=(32, 32))
    good = analyze_memory(cuda_module.kernel("tiled_padded"), block=(32, 32))
    read = _only(bad, "shared", "load")
    assert read.line == mk.CUDA_LINES("TILE_LOAD") and read.ways == 32
    assert _only(bad, "shared", "store").ways == 1
    assert {(f.kind, f.after) for f in bad.fixes} == {("padding", 1.0), ("swizzle", 1.0)}
    assert _only(good, "shared", "load").ways == 1
    assert all(a.sectors_per_request == 4.0 for a in good.accesses if a.space == "global")


# --- Triton --------------------------------------------------------------------------------------

def test_triton_copy_and_strided_load(tmp_path, monkeypatch):
    pytest.importorskip("triton", reason="the triton extra is not installed")
    from ptxforge.frontends.triton import compile_to_ptx

    import triton_memory_kernels as tmk

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    got = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (tmk.copy, tmk.strided):
            ptx = compile_to_ptx(fn, tmk.SIGNATURE, {"BLOCK": 1024}, num_warps=4,
                                 target="sm_80")[0]
            got[fn.__name__] = analyze_memory(parse(ptx).kernel(fn.__name__), block=None)
    copy, strided = got["copy"], got["strided"]
    assert copy.block == (128, 1, 1)
    loads = {a.sectors_per_request for a in copy.accesses if a.direction == "load"}
    stores = {a.sectors_per_request for a in copy.accesses if a.direction == "store"}
    width = {a.width for a in copy.accesses}
    assert loads == stores == {float(width.pop())}  # 32 lanes x width bytes, no waste
    sl = [a for a in strided.accesses if a.direction == "load"]
    assert sl and all(a.sectors_per_request == 2 * 32 * a.width / 32 for a in sl)
    assert {f.kind for f in strided.fixes} == {"coalesce"}
