"""Triton kernels without a GPU: compile a ``@triton.jit`` function for a target, then analyse.

:func:`analyze` is one call: it compiles the kernel with ``triton.compile`` for a
``GPUTarget`` (no device, no driver: Triton's own PTX pipeline), then runs
:func:`ptxforge.reports.analyze.analyze_ptx` on the PTX at Triton's block size (32 ×
``num_warps``) with the shared memory Triton asks for at launch as dynamic shared memory.
Triton's PTX carries ``.file``/``.loc`` lines for the kernel's Python source, so the values
live at the pressure peak name the ``.py`` lines that made them.  Spills are ptxas's spill
stores and loads, apart from the stack; the report's notes carry the sentence on how this
differs from Triton's ``n_spills`` (:data:`ptxforge.frontends.triton_cache.N_SPILLS_NOTE`).

Needs the ``triton`` extra (``pip install ptxforge[triton]``); without it the call raises
:class:`~ptxforge.errors.BackendUnavailableError` saying so.

Example::

    >>> import triton, triton.language as tl                          # doctest: +SKIP
    >>> @triton.jit                                                    # doctest: +SKIP
    ... def add(x, y, out, n, BLOCK: tl.constexpr):
    ...     i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ...     tl.store(out + i, tl.load(x + i, mask=i < n) + tl.load(y + i, mask=i < n),
    ...              mask=i < n)
    >>> res = analyze(add, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"},
    ...               {"BLOCK": 1024}, num_warps=4, target="sm_80")   # doctest: +SKIP
    >>> res.kernels[0].stats.registers                                 # doctest: +SKIP
    18
"""

from __future__ import annotations

from typing import Optional, Union

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BackendUnavailableError, PtxforgeError

from .triton_cache import with_n_spills_note

__all__ = ["analyze", "compile_to_ptx", "normalize_signature", "num_warps_levers"]


def _triton():
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as exc:
        raise BackendUnavailableError(
            f"Triton is not installed ({exc}); install it with `pip install ptxforge[triton]`"
        ) from None
    return triton, GPUTarget, ASTSource


def normalize_signature(kernel, signature: Union[dict, str, list, tuple],
                        constexprs: Optional[dict] = None) -> dict:
    """Triton's signature dict ``{argument: type}`` from a dict, a list of types or a
    comma-separated string (``"*fp32,*fp32,i32"``) in argument order; arguments given in
    ``constexprs`` get ``"constexpr"``.  PtxforgeError naming the arguments otherwise.

    Example::

        >>> class K:  # anything with arg_names, like a @triton.jit function
        ...     arg_names = ["x", "n", "BLOCK"]
        >>> normalize_signature(K, "*fp32, i32", {"BLOCK": 128})
        {'x': '*fp32', 'n': 'i32', 'BLOCK': 'constexpr'}
    """
    names = list(getattr(kernel, "arg_names", None) or [])
    constexprs = dict(constexprs or {})
    if isinstance(signature, str):
        signature = [s.strip() for s in signature.split(",") if s.strip()]
    if isinstance(signature, (list, tuple)):
        free = [n for n in names if n not in constexprs]
        if len(signature) != len(free):
            raise PtxforgeError(f"Triton signature: {len(signature)} types for the "
                                f"{len(free)} non-constexpr arguments {free}")
        signature = dict(zip(free, signature))
    if not isinstance(signature, dict):
        raise PtxforgeError(f"Triton signature: expected a dict {{argument: type}}, a list of "
                            f"types or 'type,type,...', got {signature!r}")
    out = {}
    for n in names or list(signature):
        if n in constexprs:
            out[n] = "constexpr"
        elif n in signature:
            out[n] = signature[n]
        else:
            raise PtxforgeError(f"Triton signature: no type for argument {n!r} (give it in "
                                f"signature=, or its value in constexprs=); arguments: {names}")
    extra = sorted(set(signature) - set(out))
    if extra:
        raise PtxforgeError(f"Triton signature: {extra[0]!r} is not an argument of the kernel; "
                            f"arguments: {names}")
    return out


def compile_to_ptx(kernel, signature, constexprs: Optional[dict] = None, *,
                   num_warps: int = 4, num_stages: int = 3,
                   target: Union[str, int] = "sm_80", options: Optional[dict] = None) -> tuple:
    """``(ptx text, metadata dict)`` of a ``@triton.jit`` kernel compiled for ``target``
    (a registered target name, e.g. ``"sm_80"``, ``"sm_90a"``) without a GPU."""
    triton, GPUTarget, ASTSource = _triton()
    tgt = as_target(target)
    if not isinstance(num_warps, int) or num_warps < 1 or num_warps & (num_warps - 1):
        raise PtxforgeError(f"num_warps must be a power of two >= 1, got {num_warps!r}")
    sig = normalize_signature(kernel, signature, constexprs)
    constants = {k: v for k, v in (constexprs or {}).items()}
    try:
        src = ASTSource(fn=kernel, signature=sig, constexprs=constants)
        compiled = triton.compile(src, target=GPUTarget("cuda", tgt.sm, 32),
                                  options={"num_warps": num_warps, "num_stages": num_stages,
                                           **(options or {})})
    except PtxforgeError:
        raise
    except Exception as exc:  # Triton's compile errors carry the kernel's line
        name = getattr(kernel, "__name__", repr(kernel))
        raise PtxforgeError(f"Triton could not compile {name} for {tgt.name}: "
                            f"{type(exc).__name__}: {exc}") from None
    meta = compiled.metadata
    meta = meta._asdict() if hasattr(meta, "_asdict") else dict(vars(meta))
    return compiled.asm["ptx"], meta


def analyze(kernel, signature, constexprs: Optional[dict] = None, *, num_warps: int = 4,
            num_stages: int = 3, target: Union[str, int] = "sm_80",
            options: Optional[dict] = None, **kwargs):
    """Compile a ``@triton.jit`` ``kernel`` for ``signature`` (``{argument: "*fp32" | "i32"
    | …}``), ``constexprs`` (``{name: value}``), ``num_warps`` and ``target``, without a GPU,
    and analyse its PTX (a :class:`~ptxforge.reports.analyze.ModuleAnalysis`; ``kwargs``
    go to :func:`~ptxforge.reports.analyze.analyze_ptx`: ``compile=False`` runs no ptxas,
    ``request=`` says how it runs).

    The block size is 32 × ``num_warps`` and the dynamic shared memory Triton's own
    ``shared``; the peak's values name the kernel's Python lines.
    """
    from ptxforge.arch.spec import LaunchSpec
    from ptxforge.reports.analyze import analyze_ptx

    ptx, meta = compile_to_ptx(kernel, signature, constexprs, num_warps=num_warps,
                               num_stages=num_stages, target=target, options=options)
    name = f"<triton {meta.get('name', getattr(kernel, '__name__', 'kernel'))}>"
    spec = LaunchSpec(target=target, block=32 * num_warps,
                      dynamic_shared=int(meta.get("shared") or 0))
    res = analyze_ptx(ptx, name, spec, **kwargs)
    return with_n_spills_note(res)


def num_warps_levers(kernel, signature, constexprs: dict | None = None, *,
                     num_warps: int = 4, num_stages: int = 3,
                     target: str | int = "sm_80", options: dict | None = None,
                     choices: tuple = (1, 2, 4, 8, 16, 32)) -> tuple:
    """Triton's ``num_warps`` as a lever: the kernel compiled at ``num_warps`` (its present
    figures), then recompiled by ``triton.compile`` for a ``GPUTarget`` (no GPU) at each
    other W of ``choices``, each compile's registers, spills and blocks per SM beside what
    32 × W threads promise at the present registers
    (:func:`~ptxforge.reports.levers.prove_num_warps`).  ``(now, proven levers)``.

    Example::

        >>> now, proven = num_warps_levers(matmul, sig, {"BM": 64, "BN": 64, "BK": 32},
        ...                                target="sm_80")                 # doctest: +SKIP
        >>> proven[0].lever.kind, proven[0].outcome.registers               # doctest: +SKIP
        ('triton num_warps', 96)
    """
    from ptxforge.reports.levers import compile_outcome, prove_num_warps

    tgt = as_target(target).name

    def recompile(w: int) -> tuple:
        ptx, meta = compile_to_ptx(kernel, signature, constexprs, num_warps=w,
                                   num_stages=num_stages, target=target, options=options)
        return ptx, str(meta.get("name")), int(meta.get("shared") or 0)

    ptx, name, dyn = recompile(num_warps)
    now = compile_outcome(ptx, name, tgt, 32 * num_warps, dynamic_shared=dyn)
    return now, prove_num_warps(recompile, num_warps, now, tgt, choices=choices)
