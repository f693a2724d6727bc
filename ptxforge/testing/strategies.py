"""Hypothesis strategies that generate well-typed PTX kernels through the public KernelBuilder
API, for property-based tests (yours and ours).

A generated module is described by a small, printable :class:`ModuleRecipe`: device functions
and kernels, each a list of *steps*.  A step is an op (``("op", "add.f32", picks, guard)``),
an if/else diamond, or a counted loop with an in-place accumulator.  ``picks`` are small ints
that choose operands from a pool of live values of each type (``pool[pick % len(pool)]``; a
value is created on demand when the pool is empty), so every op is well-typed by construction,
and hypothesis shrinks a failure to a few short steps with small picks.  :func:`build_module`
interprets a recipe (pure and deterministic: the same recipe gives byte-identical PTX).

The op catalogue covers every type and op family the builder offers (arithmetic with its
modifiers, in-place ops, carry chains, bit twiddling (prmt, lop3, shf, dp4a/dp2a, szext, bmsk,
testp, ...), compare/select/convert/move/pack, global loads and
stores including vectors, shared/local/const arrays, atomics and reductions, barriers and
fences, shuffles/votes/redux, special registers, calls); entries the builder refuses on a
target are left out (see :func:`excluded_ops`).

This module needs **hypothesis** (``pip install 'ptxforge[test]'``); it is imported when a
strategy is first asked for, so :func:`build_module` works without it.

Example::

    from hypothesis import given
    from ptxforge.testing.strategies import modules

    @given(modules(target="sm_80", max_ops=16))
    def test_my_pass_keeps_ptx_valid(gen):
        out = my_pass(gen.module)          # an ir.Module
        compile_ptx(out, "sm_80")          # ptxas must still accept it
"""

from __future__ import annotations

from typing import Optional

import attrs

from ptxforge.dsl.builder import ModuleBuilder
from ptxforge.errors import PtxforgeError
from ptxforge.ptx import types as T
from ptxforge.ptx.emit import emit

from .ops import CATALOGUE, REGION_EXTRA, REGION_SINK, _Ctx, available_entries, excluded_entries

__all__ = [
    "FuncRecipe",
    "KernelRecipe",
    "ModuleRecipe",
    "GeneratedModule",
    "build_module",
    "generated",
    "module_recipes",
    "modules",
    "op_keys",
    "excluded_ops",
    "count_ops",
]

# No 8/16-bit parameters: ptxas refuses them for .func (the builder accepts them: reported)
_PARAM_TYPES = ("u32", "f32", "s32", "u64", "f64", "b32", "s64")
_ACC_TYPES = (T.f32, T.u32, T.f64, T.s64, T.u64)
_DIRECTIVES = ((), ((".maxntid", (256, 1, 1)),), ((".reqntid", (128, 1, 1)),),
               ((".maxnreg", (64,)),), ((".minnctapersm", (2,)), (".maxntid", (256, 1, 1))))


@attrs.frozen(slots=True, kw_only=True)
class FuncRecipe:
    """A ``.func``: parameter and return type names, and its steps.  It also receives the
    kernel's data pointer as a last ``.u64`` parameter."""

    params: tuple = ()
    returns: tuple = ()
    steps: tuple = ()


@attrs.frozen(slots=True, kw_only=True)
class KernelRecipe:
    """An ``.entry`` kernel: its steps, a performance-directive choice (0: none), and
    ``live_across``: None, or k extra ``.f32`` values loaded before a ``bar.sync`` at the
    start and stored after a ``bar.sync`` at the end (the controlled-pair construction)."""

    steps: tuple = ()
    directives: int = 0
    live_across: Optional[int] = None


@attrs.frozen(slots=True, kw_only=True)
class ModuleRecipe:
    """A module: target, device functions, kernels (at least one)."""

    target: str = "sm_80"
    funcs: tuple = ()
    kernels: tuple = (KernelRecipe(),)


class GeneratedModule:
    """A recipe and what it builds: ``module`` (ir.Module) and ``ptx`` (its text).

    Its repr is the recipe, so a falsifying example printed by hypothesis can be pasted into
    ``@example(generated(...))``.
    """

    __slots__ = ("recipe", "module", "_ptx")

    def __init__(self, recipe: ModuleRecipe, module) -> None:
        self.recipe = recipe
        self.module = module
        self._ptx: Optional[str] = None

    @property
    def ptx(self) -> str:
        if self._ptx is None:
            self._ptx = emit(self.module)
        return self._ptx

    @property
    def target(self) -> str:
        return self.recipe.target

    def __repr__(self) -> str:
        return f"generated({self.recipe!r})"


def generated(recipe: ModuleRecipe) -> GeneratedModule:
    """Build ``recipe`` into a :class:`GeneratedModule` (for ``@example(...)`` regressions)."""
    return GeneratedModule(recipe, build_module(recipe))


# --- interpretation ---------------------------------------------------------------------------

def _run_steps(ctx: _Ctx, steps: tuple) -> None:
    """Interpret steps against ``ctx`` (see the module docstring for the step forms)."""
    kb = ctx.kb
    for step in steps:
        kind = step[0]
        if kind == "op":
            _, key, picks, guard = step
            entry = CATALOGUE.get(key)
            if entry is None:
                raise PtxforgeError(f"recipe names an unknown op {key!r}")
            g = ctx.get(T.pred, guard) if guard is not None else None
            entry.run(ctx, picks, g)
        elif kind == "if":
            _, pick, negate, then, other = step
            p = ctx.get(T.pred, pick)
            ctx.push()
            with kb.if_(p, negate=negate):
                _run_steps(ctx, then)
            ctx.pop()
            if other is not None:
                ctx.push()
                with kb.else_():
                    _run_steps(ctx, other)
                ctx.pop()
        elif kind == "loop":
            _, bound, acc, body = step
            acc_ty = _ACC_TYPES[acc % len(_ACC_TYPES)]
            accumulator = kb.mov(0.0 if acc_ty.is_float else 0, type=acc_ty.name)
            stop = bound % 5 + 1 if bound % 3 else ctx.get(T.u32, bound)
            ctx.push()
            with kb.loop(0, stop, 1) as i:
                ctx.readonly.add(i.name)
                ctx.add(i)
                _run_steps(ctx, body)
                kb.iadd(accumulator, ctx.get(acc_ty, bound + acc))
            ctx.pop()
            ctx.add(accumulator)
        else:
            raise PtxforgeError(f"unknown recipe step kind {kind!r}")


def _sink_values(ctx: _Ctx) -> list:
    """The newest value of every type, as (value, type, offset) to store at the end (values
    made here, such as predicates turned into integers, are made now, before any barrier)."""
    kb = ctx.kb
    off = REGION_SINK
    out = []
    for ty in sorted(ctx.pools, key=lambda t: t.name):
        vals = ctx.pools[ty]
        if not vals:
            continue
        v = vals[-1]
        if ty is T.pred:
            v, ty = kb.selp(1, 0, v, type="u32"), T.u32
        size = max(ty.bits // 8, 1)
        off = -(-off // size) * size
        out.append((v, ty, off))
        off += size
    if not out:
        out.append((kb.mov(0, type="u32"), T.u32, off))
    return out


def _sink(ctx: _Ctx, values: list) -> None:
    """Store the sink values (keeps the code alive for ptxas)."""
    for v, ty, off in values:
        ctx.kb.st(ctx.ptr, v, type=ty.name, space="global", offset=off)


def build_module(recipe: ModuleRecipe):
    """Interpret a :class:`ModuleRecipe` through the KernelBuilder API into an ``ir.Module``.

    Example::

        >>> from ptxforge.testing.strategies import ModuleRecipe, KernelRecipe, build_module
        >>> k = KernelRecipe(steps=(("op", "add.f32", (0, 1, 2, 3), None),))
        >>> r = ModuleRecipe(target="sm_80", kernels=(k,))
        >>> [k.name for k in build_module(r).kernels]
        ['k0']
    """
    mb = ModuleBuilder(target=recipe.target)
    funcs: list = []
    for n, fr in enumerate(recipe.funcs):
        fb = mb.func(f"f{n}", params=[(f"a{k}", t) for k, t in enumerate(fr.params)] + [("ptr", "u64")],
                     returns=[(f"r{k}", t) for k, t in enumerate(fr.returns)])
        ctx = _Ctx(fb, fb.load_param("ptr"), list(funcs), n)
        for k in range(len(fr.params)):
            ctx.add(fb.load_param(f"a{k}"))
        _run_steps(ctx, fr.steps)
        _sink(ctx, _sink_values(ctx))
        for k, t in enumerate(fr.returns):
            fb.set_return(f"r{k}", ctx.get(T.as_type(t), k))
        funcs.append((fb, tuple(T.as_type(t) for t in fr.params)))
    for n, kr in enumerate(recipe.kernels):
        kb = mb.kernel(f"k{n}")
        for name, values in _DIRECTIVES[kr.directives % len(_DIRECTIVES)]:
            getattr(kb, name[1:])(*values)
        ptr = kb.load_param(kb.param_ptr("data", "b128"))
        ctx = _Ctx(kb, ptr, funcs, n)
        extra = []
        if kr.live_across is not None:
            extra = [kb.ld(ptr, type="f32", space="global", offset=REGION_EXTRA + 4 * j, volatile=True)
                     for j in range(kr.live_across)]
            kb.bar_sync(0)
        _run_steps(ctx, kr.steps)
        sink = _sink_values(ctx)
        if kr.live_across is not None:
            kb.bar_sync(0)
            for j, v in enumerate(extra):
                kb.st(ptr, v, type="f32", space="global", offset=REGION_EXTRA + 4 * (j + len(extra)))
        _sink(ctx, sink)
    return mb.build()


def count_ops(recipe: ModuleRecipe) -> int:
    """The number of op steps in a recipe (all functions, all nesting levels)."""
    def count(steps) -> int:
        total = 0
        for s in steps:
            if s[0] == "op":
                total += 1
            elif s[0] == "if":
                total += count(s[3]) + count(s[4] or ())
            elif s[0] == "loop":
                total += count(s[3])
        return total
    return sum(count(f.steps) for f in recipe.funcs) + sum(count(k.steps) for k in recipe.kernels)


# --- strategies -------------------------------------------------------------------------------

def op_keys(target: str = "sm_80", *, ssa_only: bool = False) -> tuple:
    """Catalogue keys usable on ``target`` (in-place ops left out with ``ssa_only``)."""
    keys = available_entries(target)
    if ssa_only:
        keys = tuple(k for k in keys if CATALOGUE[k].kind != "inplace")
    return keys


def excluded_ops(target: str = "sm_80") -> tuple:
    """(key, reason) for the catalogue ops the builder refuses on ``target``."""
    return excluded_entries(target)


def _strategies():
    try:
        from hypothesis import strategies as st
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("ptxforge.testing.strategies strategies need hypothesis: "
                          "pip install 'ptxforge[test]' (or pip install hypothesis)") from exc
    return st


def module_recipes(target: str = "sm_80", *, allow_control_flow: bool = True,
                   ssa_only: bool = False, max_ops: int = 24, max_kernels: int = 3,
                   max_funcs: int = 2, live_across: Optional[int] = None, ops=None):
    """A hypothesis strategy for :class:`ModuleRecipe`.

    ``allow_control_flow``: if/else diamonds and (unless ``ssa_only``) counted loops;
    ``ssa_only``: no in-place ops, no loops (their counters are updated in place) and no
    predicated definitions (only stores and reductions may be guarded), so every kernel is
    strict SSA; ``max_ops``: op steps per function; ``max_kernels``/``max_funcs``: how many
    kernels and device functions; ``live_across``: passed to every :class:`KernelRecipe`;
    ``ops``: a predicate on catalogue keys (``lambda key: key.endswith(".f32")``) or an
    iterable of keys, to generate only some op forms.
    """
    st = _strategies()
    keys = op_keys(target, ssa_only=ssa_only)
    if ops is not None:
        wanted = ops if callable(ops) else set(ops).__contains__
        keys = tuple(k for k in keys if wanted(k))
    if not keys:
        raise PtxforgeError(f"no catalogue op is usable on {target}")
    nodef = tuple(k for k in keys if CATALOGUE[k].kind == "nodef")
    # Each strategy is made once, not inside the draws: a fresh ``sampled_from(keys)`` per op
    # made hypothesis re-hash its 700-odd keys for the label at every draw (most of the
    # generation time).  The same strategies draw the same choices, so the same recipes come
    # out as before.
    pick = st.integers(0, 255)
    picks = st.tuples(pick, pick, pick, pick)
    key_of = st.sampled_from(keys)
    guard_roll = st.integers(0, 5)
    more = st.integers(0, 7)
    kind_of = st.integers(0, 9)
    coin = st.booleans()

    @st.composite
    def op_step(draw):
        key = draw(key_of)
        guarded = draw(guard_roll) == 5
        if guarded and ssa_only and CATALOGUE[key].kind != "nodef":
            if not nodef:
                guarded = False
            else:
                key = nodef[keys.index(key) % len(nodef)]
        return ("op", key, draw(picks), draw(pick) if guarded else None)

    one_op = op_step()

    @st.composite
    def block(draw, budget: list, depth: int):
        steps = []
        while budget[0] > 0 and draw(more) != 0:
            kind = draw(kind_of) if allow_control_flow and depth < 2 else 0
            if kind <= 7:
                budget[0] -= 1
                steps.append(draw(one_op))
            elif kind == 8 or ssa_only:
                then = draw(block(budget, depth + 1))
                other = draw(block(budget, depth + 1)) if draw(coin) else None
                steps.append(("if", draw(pick), draw(coin), then, other))
            else:
                body = draw(block(budget, depth + 1))
                steps.append(("loop", draw(pick), draw(pick), body))
        return tuple(steps)

    @st.composite
    def steps(draw):
        return draw(block([max_ops], 0))

    ptype = st.sampled_from(_PARAM_TYPES)
    func = st.builds(FuncRecipe, params=st.lists(ptype, max_size=3).map(tuple),
                     returns=st.lists(ptype, max_size=1).map(tuple), steps=steps())
    kernel = st.builds(KernelRecipe, steps=steps(),
                       directives=st.integers(0, len(_DIRECTIVES) - 1),
                       live_across=st.just(live_across))
    return st.builds(ModuleRecipe, target=st.just(target),
                     funcs=st.lists(func, max_size=max_funcs).map(tuple),
                     kernels=st.lists(kernel, min_size=1, max_size=max_kernels).map(tuple))


def modules(target: str = "sm_80", **options):
    """A hypothesis strategy for :class:`GeneratedModule` (options as :func:`module_recipes`).

    Example::

        @given(modules("sm_90", ssa_only=True))
        def test_something(gen):
            assert gen.module.kernels
    """
    return module_recipes(target, **options).map(generated)
