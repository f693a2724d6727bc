"""Malformed PTX gives a ParseError with file, line, column and the offending line."""

from __future__ import annotations

import pytest

import ptxforge
from ptxforge.errors import CompileError, ParseError
from ptxforge.ptx.parse import parse

GOOD = """.version 8.0
.target sm_80
.address_size 64

.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<4>;
\tmov.u32 %r1, %tid.x;
\tadd.s32 %r2, %r1, 1;
\tret;
}
"""


def error_of(text: str, filename: str = "bad.ptx") -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, filename)
    return info.value


def test_good_input_parses():
    assert len(parse(GOOD).kernel("k").instructions) == 3


def test_empty_file():
    err = error_of("")
    assert (err.file, err.line, err.column) == ("bad.ptx", 1, 1)
    assert "empty" in err.message and ".version" in err.message


def test_only_comments_is_empty_too():
    err = error_of("// nothing here\n/* still nothing */\n")
    assert "empty" in err.message


def test_bare_cr_line_breaks_are_named_not_called_empty():
    """With old-Mac line breaks (CR alone) a first-line '//' comment runs to the end of the
    file, for ptxas too ('Missing .version directive'): the error says why, not 'empty'."""
    err = error_of("//\r// Generated\r" + GOOD.replace("\n", "\r"))
    assert "empty" not in err.message and "CR" in err.message and "line break" in err.message
    assert (err.line, err.column) == (1, 1)
    assert len(parse(GOOD.replace("\n", "\r\n")).kernel("k").instructions) == 3


def test_two_modules_joined_are_refused_at_the_second_version():
    """Two PTX files joined into one (ptxas: 'Parsing error near .version'): the second
    module's .version is an error at its line, not a module silently read as one."""
    joined = GOOD + "\n" + GOOD.replace(".entry k(", ".entry k2(")
    err = error_of(joined)
    assert err.line == GOOD.count("\n") + 2 and ".version" in err.message
    assert "one PTX module" in err.message and "line 1" in err.message


def test_truncated_file_mid_instruction():
    text = GOOD[: GOOD.index("1;")]  # cut after 'add.s32 %r2, %r1, '
    err = error_of(text)
    assert err.line == 9
    assert "end of input" in err.message
    assert err.text.strip().startswith("add.s32")


def test_truncated_file_missing_closing_brace():
    err = error_of(GOOD.rstrip().rstrip("}"))
    assert "end of input" in err.message and "'}'" in err.message and "line 6" in err.message
    assert err.line == 10


def test_unknown_directive_in_body():
    err = error_of(GOOD.replace("\tret;", "\t.frobnicate 3;\n\tret;"))
    assert (err.line, err.column) == (10, 2)
    assert ".frobnicate" in err.message and "expected" in err.message
    assert err.text == "\t.frobnicate 3;"


def test_unknown_directive_at_module_level():
    err = error_of(GOOD.replace(".address_size 64", ".address_size 64\n.bogus 1"))
    assert (err.line, err.column) == (4, 1)
    assert "unknown directive .bogus" in err.message


def test_unbalanced_closing_brace():
    err = error_of(GOOD + "}\n")
    assert (err.line, err.column) == (12, 1)
    assert "unbalanced" in err.message


def test_unbalanced_opening_brace_in_body():
    err = error_of(GOOD.replace("\tret;", "\t{\n\tret;"))
    assert "end of input" in err.message


@pytest.mark.parametrize("decl,col,needle", [
    (".reg .f33 %r<4>;", 7, "unknown register type .f33"),
    (".reg .b32 %r<x>;", 15, "register count"),
    (".reg .b32 %r<4;", 16, "'>'"),
    (".reg %r<4>;", 7, "expected a type"),
    (".reg .b32 %r<4> %s;", 18, "expected ',' or ';'"),
])
def test_bad_register_declaration(decl, col, needle):
    err = error_of(GOOD.replace(".reg .b32 %r<4>;", decl))
    assert err.line == 7 and err.column == col, str(err)
    assert "register declaration" in err.message or "'>'" in err.message
    assert needle in err.message


def test_undeclared_register():
    err = error_of(GOOD.replace("add.s32 %r2, %r1, 1", "add.s32 %r2, %q1, 1"))
    assert (err.line, err.column) == (9, 15)
    assert "undeclared register %q1" in err.message


def test_register_beyond_declared_range():
    err = error_of(GOOD.replace("%r2, %r1", "%r2, %r4"))
    assert "undeclared register %r4" in err.message


def test_garbage_bytes():
    err = error_of(GOOD.replace("\tret;", "\t\x00\xff\x13ret;"))
    assert (err.line, err.column) == (10, 2)
    assert "expected an instruction" in err.message


def test_garbage_bytes_given_as_bytes():
    data = GOOD.encode().replace(b"mov.u32", b"\xff\xfe.u32")
    err = error_of(data)
    assert err.line == 8 and err.column == 2


def test_missing_version():
    err = error_of(GOOD.replace(".version 8.0\n", ""))
    assert (err.line, err.column) == (1, 1) and ".version" in err.message


def test_bad_operand_separator():
    err = error_of(GOOD.replace("add.s32 %r2, %r1, 1", "add.s32 %r2 %r1, 1"))
    assert (err.line, err.column) == (9, 14)
    assert "expected ',' or ';'" in err.message


def test_unterminated_block_comment():
    err = error_of(GOOD.replace("\tret;", "\t/* never closed\n\tret;"))
    assert err.line == 10 and err.column == 2


def test_message_shows_location_and_caret():
    err = error_of(GOOD.replace("\tret;", "\t.frobnicate 3;\n\tret;"))
    text = str(err)
    assert text.startswith("bad.ptx:10:2: ")
    assert "\n    \t.frobnicate 3;\n     ^" in text


def test_internal_errors_are_wrapped():
    # an integer too large for the hex conversion path still reports a location
    err = error_of(GOOD.replace("add.s32 %r2, %r1, 1", "add.s32 %r2, %r1, 0f3F80000G"))
    assert err.line == 9


def test_parse_refuses_a_non_text_argument_with_a_parse_error():
    from ptxforge import ParseError, parse

    with pytest.raises(ParseError, match="expected PTX text \\(str or bytes\\), got NoneType"):
        parse(None)


# --- vector registers and label errors, refused with a PTX position (ptxas refuses them too) --

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def registers(ptx: str) -> dict:
    return {k.name: k.registers for k in ptxforge.compile_ptx(ptx, "sm_80")}


def test_vector_registers_are_refused_by_name():
    with pytest.raises(ParseError) as info:
        parse(HEADER + ".visible .entry k()\n{\n\t.reg .v4 .f32 %v;\n\tret;\n}\n", "v.ptx")
    err = info.value
    assert (err.file, err.line, err.column) == ("v.ptx", 6, 7)
    assert "vector registers (.reg .v4" in err.message and "not supported" in err.message
    assert err.text == "\t.reg .v4 .f32 %v;"


def with_body(body: str) -> str:
    return (HEADER + ".visible .entry k(.param .u32 a)\n{\n\t.reg .b32 %r<3>;\n\t.reg .pred %p;\n"
            "\tld.param.u32 %r1, [a];\n" + body + "\n}\n")


LABEL_ERRORS = [
    # (body, line, column, message fragment)
    ("\tbra L1;\n\tret;", 9, 6, "branch target L1 is not a label of function k"),
    ("\t@%p bra.uni L2;\n\tret;", 9, 14, "branch target L2 is not a label"),
    ("L1:\n\tadd.s32 %r1, %r1, 1;\nL1:\n\tret;", 11, 1, "label L1 is defined twice in function k (first at line 9)"),
    ("ts: .branchtargets L0, L9;\n\tbrx.idx %r1, ts;\nL0:\n\tret;", 9, 24, "branch target L9 is not a label"),
    ("ts: .branchtargets L0, L9;\nL0:\n\tret;", 9, 24, "branch target L9"),  # a list used by no brx
    ("\tbrx.idx %r1, ts;\nL0:\n\tret;", 9, 15, "branch target ts is not a label"),
    ("\tbra L1;\n{\nL1:\n\tret;\n}\n\tret;", 9, 6, "inside a { } block that does not enclose this use"),
]


@pytest.mark.parametrize("body,line,column,needle", LABEL_ERRORS)
def test_label_errors_have_a_position(body, line, column, needle):
    ptx = with_body(body)
    lines = ptx.splitlines()
    with pytest.raises(ParseError) as info:
        parse(ptx, "lab.ptx")
    err = info.value
    assert (err.file, err.line, err.column) == ("lab.ptx", line, column), str(err)
    assert needle in err.message
    assert err.text == lines[line - 1]
    with pytest.raises(CompileError):  # ptxas refuses it too
        ptxforge.compile_ptx(ptx, "sm_80")


def test_label_defined_in_two_sibling_blocks_is_renamed_in_the_second():
    # legal PTX (CUTLASS's inlined LAB_WAIT loops): the second block's label and branch get a
    # unique name, so the function's CFG sees two labels
    ptx = with_body("{\nL1:\n\tadd.s32 %r1, %r1, 1;\n\t@%p bra L1;\n}\n"
                    "{\nL1:\n\t@%p bra L1;\n}\n\tret;")
    registers(ptx)  # ptxas accepts it
    body = parse(ptx).kernels[0].body
    labels = [s.name for s in body if type(s).__name__ == "Label"]
    targets = [s.operands[0].name for s in body if getattr(s, "opcode", "") == "bra"]
    assert labels == ["L1", "L1$2"] and targets == ["L1", "L1$2"]
