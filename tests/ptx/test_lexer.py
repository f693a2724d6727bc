"""The tokenizer: tokens, comments cut out, and each token's offset in the text."""

import re

import pytest

from ptxforge.ptx.lexer import Tokens


def _expected(text: str) -> tuple[list, list]:
    """Tokens and offsets by a plain scan: white space skipped, one token per match of the
    same alternatives, comments dropped (a reference slower than the lexer, written apart)."""
    from ptxforge.ptx import lexer

    one = re.compile(r"\s*(" + lexer._TOKEN.pattern.split("(?:", 1)[1], re.VERBOSE)
    toks, pos = [], []
    for m in one.finditer(text):
        t = m.group(1)
        if not (t[0] == "/" and len(t) > 1 and t[1] in "/*"):
            toks.append(t)
            pos.append(m.start(1))
    return toks, pos


CASES = [
    "add.f32 %f1, %f2, 0f3F800000; // sum\n",
    "a /* x // y */ b // c /* d\n e",
    '.pragma "a//b"; // q\n/* unclosed',
    "x\xa0y\u2028z  \t",
    "/**/x/*", "//", "/", "a //", "/*/", "", "   \n",
    "ld.global.f32 %f1, [%rd1+4];\n\t// begin inline asm\n\tmov.u32 %r1, %laneid;\n",
    # a "//" that starts inside a comment and ends on the next one's "/": both are comments
    "a /*//*//**/ b", "a\n//", "x // y", "\"ab\\",
]


@pytest.mark.parametrize("text", CASES)
def test_tokens_and_offsets_match_a_plain_scan(text):
    tk = Tokens(text)
    toks, pos = _expected(text)
    assert tk.toks == toks
    assert tk.positions() == pos
    for i, t in enumerate(toks):
        assert text[tk.offset(i):tk.end_offset(i)] == t


def test_a_lone_slash_stays_a_token_and_offsets_past_comments():
    tk = Tokens("a /* b */ c\n/ d // e\nf")
    assert tk.toks == ["a", "c", "/", "d", "f"]
    assert tk.positions() == [0, 10, 12, 14, 21]
    assert tk.offset(5) == len("a /* b */ c\n/ d // e\nf")   # past the last token: the end


def test_offsets_on_a_generated_file_with_many_comments():
    lines = []
    for i in range(2000):
        lines.append(f"\tadd.s32 %r{i}, %r{i + 1}, {i}; // step {i} /* not a block */")
        if i % 7 == 0:
            lines.append(f"/* block\n comment {i} // inside */ mov.u32 %r{i}, 0;")
    text = "\n".join(lines)
    tk = Tokens(text)
    toks, pos = _expected(text)
    assert tk.toks == toks and tk.positions() == pos
    assert len(toks) == 2000 * 7 + 286 * 5


@pytest.mark.parametrize("text", CASES + ["a // c\nb /* d */ c\n" * 50])
def test_offsets_read_without_the_positions_list_are_the_positions(text):
    # offset() sums the split pieces' lengths from the last one asked for (forward) until
    # positions() is built; a query behind the last one builds it
    lazy, full = Tokens(text), Tokens(text)
    pos = full.positions()
    n = len(full.toks)
    assert [lazy.offset(i) for i in range(n + 3)] == [full.offset(i) for i in range(n + 3)]
    assert lazy._pos is None   # the positions list was never built
    assert [lazy.offset(i) for i in range(n)] == pos   # from the start again: behind
    if n > 2:
        back = Tokens(text)
        assert back.offset(n - 1) == pos[n - 1] and back.offset(1) == pos[1]   # behind


def test_a_comment_after_one_that_ends_in_a_slash_is_cut():
    assert Tokens("a /*//*//**/ b").toks == ["a", "b"]
