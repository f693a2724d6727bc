"""Properties of emission and parsing: emission is deterministic, parse(emit(m)) emits the
same text, and the parser raises nothing but ParseError on mutated real PTX (corpus PTX from
NVRTC and generated PTX): byte flips, deleted and duplicated lines, truncation."""

from __future__ import annotations

import functools

from hypothesis import given
from hypothesis import strategies as st

from ptxforge.errors import ParseError
from ptxforge.ptx.emit import emit
from ptxforge.ptx.parse import parse
from ptxforge.testing.strategies import build_module, module_recipes, modules

import hypothesis_profiles  # noqa: F401  (registers and loads the profiles)

_SHAPE = dict(max_ops=24, max_kernels=3, max_funcs=2)


@given(module_recipes("sm_90", **_SHAPE))
def test_emission_is_deterministic(recipe):
    first = emit(build_module(recipe))
    again = emit(build_module(recipe))
    assert first == again
    assert emit(build_module(recipe), line_info=True) == emit(build_module(recipe), line_info=True)


@given(modules("sm_80", **_SHAPE))
def test_parse_of_emit_emits_the_same_text(gen):
    text = gen.ptx
    module = parse(text)
    assert emit(module) == text
    assert [k.name for k in module.kernels] == [k.name for k in gen.module.kernels]
    for mine, theirs in zip(gen.module.kernels, module.kernels):
        assert [i.opcode for i in mine.instructions] == [i.opcode for i in theirs.instructions]
        assert [[r.name for r in i.defs] for i in mine.instructions] == \
            [[r.name for r in i.defs] for i in theirs.instructions]


@functools.lru_cache(maxsize=1)
def _corpus() -> tuple:
    from corpus_util import corpus_ptx, corpus_sources

    return tuple(corpus_ptx(name, "sm_80", lineinfo) for name in corpus_sources()
                 for lineinfo in (False, True))


@st.composite
def _mutated(draw, texts):
    """A real PTX text with 1-4 mutations: byte flips, deleted/duplicated lines, truncation."""
    data = bytearray(draw(texts).encode())
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("flip", "delete", "duplicate", "truncate", "swap")))
        lines = data.split(b"\n")
        if kind == "flip" and data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "delete" and len(lines) > 1:
            del lines[draw(st.integers(0, len(lines) - 1))]
            data = bytearray(b"\n".join(lines))
        elif kind == "duplicate":
            at = draw(st.integers(0, len(lines) - 1))
            lines.insert(at, lines[at])
            data = bytearray(b"\n".join(lines))
        elif kind == "swap" and len(lines) > 1:
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            data = bytearray(b"\n".join(lines))
        elif kind == "truncate":
            data = data[:draw(st.integers(0, len(data)))]
    return bytes(data)


def _parse_or_parse_error(data: bytes) -> None:
    try:
        module = parse(data)
    except ParseError as exc:
        assert exc.line >= 0 and str(exc).startswith(exc.file)
        return
    emit(module)  # whatever parses must emit


@given(_mutated(st.deferred(lambda: st.sampled_from(_corpus()))))
def test_parser_raises_only_parse_error_on_mutated_corpus_ptx(data):
    _parse_or_parse_error(data)


@given(_mutated(modules("sm_90", max_ops=16, max_kernels=2, max_funcs=1).map(lambda g: g.ptx)))
def test_parser_raises_only_parse_error_on_mutated_generated_ptx(data):
    _parse_or_parse_error(data)
