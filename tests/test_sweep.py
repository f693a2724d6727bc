"""Register-cap sweep on the high-pressure kernel."""

import json
from pathlib import Path

from ptxforge.sweep import default_caps, sweep

PTX = (Path(__file__).parent / "data" / "ptx" / "pressure.ptx").read_text()


def test_default_caps_are_the_cliffs_down_to_24():
    assert default_caps("sm_80", 256) == (255, 128, 80, 64, 48, 40, 32, 24)
    assert default_caps("sm_86", 256, floor=40) == (255, 128, 80, 64, 48, 40)


def test_sweep_table():
    s = sweep(PTX, target="sm_80", block_size=256, caps=(64, 48), extra_caps=(32,))
    caps = [r.cap for r in s.rows]
    assert caps == [None, 64, 48, 32]
    base, c64, c48, c32 = s.rows
    assert base.registers == 72 and base.spill_stores == 0 and base.blocks_per_sm == 3
    assert c64.registers <= 64 and c64.blocks_per_sm == 4
    assert c48.registers <= 48 and c48.blocks_per_sm == 5
    assert c32.registers == 32 and c32.spill_stores == 468 and c32.blocks_per_sm == 8
    assert c32.occupancy == 1.0
    text = s.to_text()
    assert "pressure on sm_80" in text and "none" in text and "100.0%" in text
    d = json.loads(s.to_json())
    assert list(d) == sorted(d) and d["rows"][0]["cap"] is None
    assert list(d["rows"][3]) == ["blocks_per_sm", "cap", "limiting", "occupancy", "reason",
                                  "registers", "spill_loads", "spill_stores", "stack_frame"]
    assert d["rows"][3]["reason"] is None


FUNC_ONLY = """.version 8.0
.target sm_80
.address_size 64
.visible .func (.param .b32 r) f(.param .b32 a)
{
\t.reg .b32 %r<3>;
\tld.param.b32 %r1, [a];
\tadd.s32 %r2, %r1, 1;
\tst.param.b32 [r], %r2;
\tret;
}
"""


def test_a_file_of_functions_only_says_so_and_names_them():
    import pytest

    from ptxforge.errors import PtxforgeError

    with pytest.raises(PtxforgeError, match=r"'f' is a \.func, not an \.entry kernel: the PTX "
                                            r"has no \.entry kernels, only functions \(f\)"):
        sweep(FUNC_ONLY, "f", "sm_80")
    with pytest.raises(PtxforgeError, match="kernels none; name the one"):
        sweep(FUNC_ONLY, None, "sm_80")


def test_unknown_occupancy_target_sweeps_with_generic_caps():
    from ptxforge.sweep import GENERIC_CAPS

    assert default_caps("sm_110", 256) == GENERIC_CAPS
    s = sweep(PTX, target="sm_110", block_size=256, caps=(64,))
    assert [r.cap for r in s.rows] == [None, 64]
    assert all(r.blocks_per_sm is None and r.occupancy is None for r in s.rows)
    assert "no occupancy table for sm_110" in s.rows[0].reason
    assert "n/a" in s.to_text()
