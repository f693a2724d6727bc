"""ptx_entries' body ends (nested blocks, braces in comments, an unclosed body) and the mask of the text read twice per compile."""

from ptxforge.ptx import directives
from ptxforge.ptx.directives import mask_comments, ptx_entries, ptx_target

HEAD = ".version 8.0\n.target sm_80\n.address_size 64\n"


def test_nested_blocks_and_comment_braces_end_the_body_where_ptxas_does():
    text = HEAD + (".visible .entry a() {\n { .local .align 4 .b8 x[16]; }\n // }\n"
                   " .local .b32 y[2];\n /* } { */ ret;\n}\n"
                   ".visible .entry b() .maxntid 64, 1, 1 {\n .local .b8 z[3];\n ret;\n}\n")
    a, b = ptx_entries(text)
    assert (a.name, a.local_array_bytes, a.line) == ("a", 16 + 8, 4)
    assert (b.name, b.local_array_bytes, b.maxntid, b.threads) == ("b", 3, (64, 1, 1), 64)


def test_an_unclosed_body_runs_to_the_end():
    (k,) = ptx_entries(HEAD + ".visible .entry k() {\n .local .b64 w[4];\n { ret;\n")
    assert k.local_array_bytes == 32


def test_a_declaration_without_a_body_is_no_entry():
    assert [e.name for e in ptx_entries(HEAD + ".extern .entry d();\n.entry e() { ret; }")] == ["e"]


def test_the_mask_of_the_same_text_is_made_once():
    text = HEAD + "// .target sm_90\n.visible .entry k() { ret; } /* { */\n"
    first = mask_comments(text)
    assert directives._LAST_MASKED[0] is text and mask_comments(text) is first
    assert ptx_target(text).arch == "sm_80" and [e.name for e in ptx_entries(text)] == ["k"]
    other = text.replace("sm_80", "sm_86")
    assert ptx_target(other).arch == "sm_86" and mask_comments(other) is not first
    assert mask_comments(text) == first


def test_entry_lines_on_a_many_kernel_text():
    # counted in one pass over the text: each entry's line must still be its own
    from ptxforge.reports.figures import entry_lines

    parts = [".version 8.0\n.target sm_80\n.address_size 64\n// .entry fake() {}\n"]
    for i in range(60):
        parts.append("\n" * (i % 5) + f".visible .entry k{i}(\n.param .u32 p\n)\n.maxntid {32 * (i % 4 + 1)}\n"
                     "{\n\tret;\n}\n")
    text = "".join(parts)
    want = {f"k{i}": n for n, line in enumerate(text.split("\n"), 1)
            for i in range(60) if line == f".visible .entry k{i}("}
    got = {e.name: e.line for e in ptx_entries(text)}
    assert got == want and len(got) == 60
    assert entry_lines(text) == want
    assert [e.maxntid for e in ptx_entries(text)][:4] == [(32,), (64,), (96,), (128,)]
