"""The measured ptxas constants live once, in ptxforge.arch.ptxas_model; every wing reads them
from there (no numeric copy elsewhere)."""

from __future__ import annotations

import re
from pathlib import Path

from ptxforge.arch import ptxas_model as pm

PACKAGE = Path(pm.__file__).resolve().parents[1]
# a module-level assignment of one of the measured names (or the old private copies) to a number
_COPY = re.compile(r"^(_?(?:FIXED_OVERHEAD|HOLES|CALL_FLOOR|PREDICATE_FILE|REGISTER_LIMIT|RESERVED|"
                   r"REGCOUNT_RESERVED|NO_CAP|MAX_REGISTERS|WARP_SYNC_FLOOR\w*|SMALL_GAP|FLOOR|"
                   r"STACK_POINTER))\s*=\s*[\d(]", re.M)


def test_the_constants_and_their_relations():
    assert (pm.REGCOUNT_RESERVED, pm.STACK_POINTER, pm.FIXED_OVERHEAD) == (2, 1, 3)
    assert (pm.HOLES, pm.CALL_FLOOR, pm.WARP_SYNC_FLOOR, pm.PREDICATE_FILE) == (4, 24, 24, 7)
    assert pm.REGISTER_LIMIT == 255
    assert pm.regcount_from_spans(8) == 10
    assert pm.regcount_from_spans(8, subroutines=24) == 24
    assert pm.regcount_from_spans(30, callees=24) == 32


def test_every_wing_reads_the_one_model():
    from ptxforge.analysis import prediction
    from ptxforge.analysis.prediction import abi, model
    from ptxforge.reports import estimate, gap, resources, sass
    from ptxforge.toolchain import regcap

    assert estimate.FIXED_OVERHEAD is model.FIXED_OVERHEAD is prediction.FIXED_OVERHEAD
    assert model.HOLES == estimate.HOLES == pm.HOLES
    assert abi.CALL_FLOOR == model.CALL_FLOOR == pm.CALL_FLOOR
    assert abi.PREDICATE_FILE == pm.PREDICATE_FILE
    assert sass.RESERVED == gap.REGCOUNT_RESERVED == pm.REGCOUNT_RESERVED
    assert resources.MAX_REGISTERS == regcap.NO_CAP == model.REGISTER_LIMIT == pm.REGISTER_LIMIT


def test_no_numeric_copy_of_a_measured_constant_elsewhere():
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "ptxas_model.py":
            continue
        for m in _COPY.finditer(path.read_text(encoding="utf-8")):
            copies.append(f"{path.relative_to(PACKAGE)}: {m.group(0)}")
    assert not copies, copies
