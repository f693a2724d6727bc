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
    assert list(d["rows"][3]) == ["blocks_per_sm", "cap", "limiting", "occupancy", "registers",
                                  "spill_loads", "spill_stores", "stack_frame"]
