"""The life-range table read a run of marked registers at a time gives what reading it mark by
mark gives: on nvdisasm's real listings (a tensor-core GEMM with tens of live registers per
row, the captured golden listings), on generated cells, and on cells it must refuse (the
mark-by-mark reading then names the fault, as it did before the runs).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptxforge.errors import PtxforgeError
from ptxforge.toolchain import sass_listing as L
from ptxforge.toolchain.compile import compile_ptx
from ptxforge.toolchain.nvdisasm import LIFE_RANGES, find_nvdisasm
from ptxforge.toolchain.sass import _run

from corpus_util import corpus_ptx
from hypothesis_profiles import examples

DATA = Path(__file__).parents[1] / "data" / "sass"


def _tables(text: str):
    """``(group list, cells, line)`` of every instruction row of a narrow listing."""
    groups, header, state = None, [], "none"
    for line in text.splitlines():
        if L._SECTION.match(line):
            groups, header, state = None, [], "none"
            continue
        t = L._TABLE.search(line)
        table = t.group(1) if t else None
        if table is not None and table.startswith("+"):
            state = {"none": "header", "header": "body"}.get(state, "done")
            if state == "body":
                groups = L._header(header, "test")
            continue
        if state == "header" and table is not None:
            header.append((0, table))
        elif state == "body" and table is not None and L._INSTR.match(line):
            yield groups, table.split("|")[1:-1], line


def _listings() -> list:
    built = compile_ptx(corpus_ptx("gemm", "sm_80", True), "sm_80")
    return [_run(find_nvdisasm(), built.cubin, LIFE_RANGES),
            (DATA / "saxpy_sm80.narrow.txt").read_text(),
            (DATA / "call_sm80.narrow.txt").read_text()]


def test_runs_read_every_row_of_real_listings_as_one_by_one_does():
    rows = marks = 0
    for text in _listings():
        for groups, cells, line in _tables(text):
            for g, cell in zip(groups, cells):
                quick = L._runs(g, cell)
                assert g.first is not None and quick is not None, line
                assert quick == L._one_by_one(g, cell, 0, line, "test"), line
                rows += 1
                marks += len(quick)
    assert rows > 500 and marks > 5 * rows / 4      # wide rows: many marks per row


_GROUP = L._header([(1, "|  GPR    |"), (2, "|     0000|"), (3, "|   # 0123|")], "test")[0]


@settings(max_examples=examples(1))
@given(st.text(alphabet=" :^vx", min_size=4, max_size=4))
def test_runs_equal_one_by_one_on_generated_cells(marks):
    cell = "   7 " + marks
    assert _GROUP.first == 0 and len(_GROUP.columns) == 4
    assert L._runs(_GROUP, cell) == L._one_by_one(_GROUP, cell, 0, cell, "test")


@pytest.mark.parametrize("cell,message", [
    ("   2 :?  ", "unexpected mark '?' for GPR register 1"),
])
def test_a_cell_the_runs_refuse_gets_the_mark_by_mark_error(cell, message):
    assert L._runs(_GROUP, cell) is None
    with pytest.raises(PtxforgeError, match=re.escape(message)):
        L._row([_GROUP], [cell], 7, cell, "test")


def test_a_group_with_gaps_between_its_columns_is_read_mark_by_mark():
    gapped = L._header([(1, "|  GPR     |"), (2, "|     00 00|"), (3, "|   # 01 23|")],
                       "test")[0]
    assert gapped.first is None and L._runs(gapped, "   3 :^ v ") is None
    assert L._row([gapped], ["   3 :^ v "], 1, "", "test")[1] == (((0, ":"), (1, "^"),
                                                                     (2, "v")),)
    with pytest.raises(PtxforgeError, match="between the GPR register columns"):
        L._row([gapped], ["   3 :^xv "], 1, "", "test")
