"""The one target registry: every layer accepts the same names, and its facts match the tools."""

from __future__ import annotations

import subprocess

import pytest

from ptxforge import KernelBuilder
from ptxforge.arch.occupancy import arch_props, occupancy, register_cliffs
from ptxforge.arch.targets import TARGETS, Target, target
from ptxforge.errors import PtxforgeError, UnsupportedError
from ptxforge.reports.analyze import check_target
from ptxforge.toolchain.backends import find_ptxas, ptxas_version
from ptxforge.toolchain.compile import CompileOptions

NAMES = list(TARGETS)
NOT_TARGETS = ["sm_42", "sm_80a", "sm_90f", "sm_99", "sm_100x", "compute_61x", "8.65", "", 7.5]


def _layers(name) -> dict:
    """What each layer says of ``name``: the normalised name it accepted, or the error text."""
    def ask(fn):
        try:
            return ("ok", fn())
        except PtxforgeError as exc:
            return ("refused", str(exc))

    def build():
        kb = KernelBuilder("k", target=name)
        kb.ret()
        return kb.build().target

    return {
        "builder": ask(build),
        "compile options": ask(lambda: CompileOptions().ptxas_args(name)[0].split("=")[1]),
        "nvjitlink options": ask(lambda: CompileOptions().nvjitlink_args(name)[0].split("=")[1]),
        "occupancy": ask(lambda: occupancy(32, 128, name).arch and target(name).name),
        "cliffs": ask(lambda: register_cliffs(32, 128, name) and target(name).name),
        "analyze --arch": ask(lambda: check_target(name)),
        "occupancy --arch": ask(lambda: check_target(name, compile=False)),
    }


def test_the_registry_spans_sm50_to_sm121_with_variants():
    assert NAMES[0] == "sm_50" and NAMES[-1] == "sm_121f"
    bases = {t.base for t in TARGETS.values()}
    assert {"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_88", "sm_90", "sm_100", "sm_101",
            "sm_103", "sm_110", "sm_120", "sm_121"} <= bases
    assert [n for n in NAMES if n.endswith("a")] == [
        "sm_90a", "sm_100a", "sm_101a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"]
    assert all(t.name + "f" in TARGETS for t in TARGETS.values() if t.sm >= 100 and not t.suffix)
    assert "sm_90f" not in TARGETS and "sm_80a" not in TARGETS


@pytest.mark.parametrize("name", NAMES)
def test_every_layer_accepts_every_registered_name(name):
    t = TARGETS[name]
    said = _layers(name)
    occupancy_layers = {"occupancy", "cliffs", "occupancy --arch"}
    for layer, (verdict, value) in said.items():
        if layer in occupancy_layers and t.props is None:
            # the registry knows the target but has no per-SM table: every occupancy layer
            # refuses with the registry's own reason, word for word
            assert verdict == "refused", (layer, value)
            assert value == f"occupancy: {t.occupancy_reason}", (layer, value)
        else:
            assert (verdict, value) == ("ok", name), (layer, value)


@pytest.mark.parametrize("name", NOT_TARGETS)
def test_every_layer_refuses_an_unknown_name_with_the_same_reason(name):
    said = _layers(name)
    with pytest.raises(UnsupportedError) as info:
        target(name)
    expected = str(info.value)
    assert "unknown target" in expected and "sm_50" in expected and "sm_121f" in expected
    assert {layer: v for layer, v in said.items()} == {layer: ("refused", expected)
                                                       for layer in said}


def test_spellings_of_one_target_are_one_object():
    assert target("sm_86") is target("86") is target(86) is target("8.6") is target("SM_86")
    assert target("compute_100f") is target("100f") is target("10.0f") is TARGETS["sm_100f"]
    t = target("sm_90a")
    assert target(t) is t and str(t) == "sm_90a" and t.compute == "compute_90a"
    assert (t.cc, t.base, t.major, t.minor, t.suffix) == ("9.0", "sm_90", 9, 0, "a")
    with pytest.raises(UnsupportedError, match="got a bool"):
        target(True)


def test_occupancy_tables_are_shared_by_variants():
    assert arch_props("sm_90a") is arch_props("sm_90") is TARGETS["sm_90"].props
    assert arch_props("sm_100f") is arch_props("sm_100")
    covered = [t.name for t in TARGETS.values() if t.props is not None and not t.suffix]
    assert covered == ["sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
                       "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_103",
                       "sm_120", "sm_121"]
    missing = [t.name for t in TARGETS.values() if t.props is None]
    assert missing == ["sm_88", "sm_101", "sm_101a", "sm_101f", "sm_110", "sm_110a", "sm_110f"]
    reason = TARGETS["sm_88"].occupancy_reason
    assert reason.startswith("no occupancy table for sm_88: ") and "sm_121" in reason


# --- the registry's facts, checked against the real tools --------------------------------------

def _ptx(version: tuple, name: str) -> str:
    return (f".version {version[0]}.{version[1]}\n.target {name}\n.address_size 64\n"
            ".visible .entry k() { ret; }\n")


def _one_below(version: tuple) -> tuple:
    major, minor = version
    return (major, minor - 1) if minor else (major - 1, 8 if major - 1 >= 7 else 5)


def _nvjitlink_accepts(version: tuple, name: str) -> bool:
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    text = _ptx(version, name).encode()
    try:
        handle = nvjitlink.create(1, [f"-arch={name}"])
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, text, len(text), "k")
        nvjitlink.complete(handle)
    except Exception:  # nvJitLinkError: the target or the version is refused
        return False
    return True


def _ptxas12():
    for exe in find_ptxas():
        if ptxas_version(exe)[0] == 12:
            return exe
    pytest.skip("needs a CUDA 12 ptxas (pip install nvidia-cuda-nvcc-cu12, in the test extra)")


def _ptxas_accepts(exe: str, version: tuple, name: str, tmp_path) -> bool:
    src = tmp_path / f"{name}.ptx"
    src.write_text(_ptx(version, name))
    run = subprocess.run([exe, "-arch", name, str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True)
    return run.returncode == 0


def _nvjitlink_major() -> int:
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    return nvjitlink.version()[0]


@pytest.mark.parametrize("name", NAMES)
def test_toolkits_and_ptx_minimum_match_nvjitlink(name):
    major = _nvjitlink_major()
    t: Target = TARGETS[name]
    accepts = _nvjitlink_accepts(t.min_ptx, name)
    assert accepts is (major in t.toolkits), (name, major, t.toolkits)
    if accepts:
        assert not _nvjitlink_accepts(_one_below(t.min_ptx), name), (name, t.min_ptx)


@pytest.mark.parametrize("name", NAMES)
def test_toolkits_and_ptx_minimum_match_cuda12_ptxas(name, tmp_path):
    exe = _ptxas12()
    t: Target = TARGETS[name]
    accepts = _ptxas_accepts(exe, t.min_ptx, name, tmp_path)
    assert accepts is (12 in t.toolkits), (name, t.toolkits)
    if accepts and t.sm >= 75:  # sm_50 … sm_72 keep the ISA's documented minimum
        assert not _ptxas_accepts(exe, _one_below(t.min_ptx), name, tmp_path), name


def test_maxwell_and_pascal_tables_by_hand():
    # 255 registers -> 8192 per warp; 160 threads = 5 warps, counted as 8 (4 sub-partitions):
    # 65536 registers, more than the 32K a block may have on 5.3 and 6.2, exactly 64K elsewhere
    assert occupancy(255, 160, "sm_53").active_blocks == 0
    assert occupancy(255, 160, "sm_62").active_blocks == 0
    assert occupancy(255, 160, "sm_52").active_blocks == 1
    # GP100 has 2 sub-partitions but runs only what GP10x (4) runs: 84 registers -> 2816 per
    # warp; 672 threads = 21 warps, counted as 22 on GP100 (61952 registers, fits) but as 24 on
    # GP10x (67584 > 65536): no block.  80 registers: 2560 x 24 = 61440 fits both, 1 block.
    gp100 = occupancy(84, 672, "sm_60")
    assert gp100.active_blocks == 0 and "2816 per warp x 24 warps as on GP10x" in gp100.reason
    assert occupancy(84, 672, "sm_61").active_blocks == 0
    assert occupancy(80, 672, "sm_60").active_blocks == 1
    # dedicated shared memory: 96 KB on 5.2/6.1, 64 KB on 5.0/6.0, and no opt-in above 48 KB
    assert occupancy(32, 64, "sm_61", shared=48 * 1024).active_blocks == 2
    assert occupancy(32, 64, "sm_60", shared=48 * 1024).active_blocks == 1
    assert occupancy(32, 64, "sm_61", shared=48 * 1024 + 1).active_blocks == 0
