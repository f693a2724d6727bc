"""numba-cuda kernels without a GPU: a ``@cuda.jit`` function's PTX for a signature, analysed.

:func:`analyze` compiles the Python function with ``numba.cuda.compile_ptx`` for the
target's compute capability with ``lineinfo=True`` (NVVM, no device needed), so the PTX's
``.loc`` lines are the function's Python lines, then runs
:func:`ptxforge.reports.analyze.analyze_ptx` on it: the values live at the pressure peak
answer "what lines of code are requiring registers?".

Needs the ``numba`` extra (``pip install ptxforge[numba]``: numba-cuda with NVVM and NVRTC
from pip); without it the call raises :class:`~ptxforge.errors.BackendUnavailableError`.

Example::

    >>> from numba import cuda, float32                                   # doctest: +SKIP
    >>> @cuda.jit                                                         # doctest: +SKIP
    ... def axpy(out, a, x, y):
    ...     i = cuda.grid(1)
    ...     if i < out.size:
    ...         out[i] = a * x[i] + y[i]
    >>> res = analyze(axpy, (float32[:], float32, float32[:], float32[:]))  # doctest: +SKIP
    >>> res.kernels[0].pressure.peak.by_source[0].file.endswith(".py")   # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Optional, Union

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import BackendUnavailableError, PtxforgeError

__all__ = ["analyze", "compile_to_ptx"]


def _compile_ptx():
    try:
        from numba.cuda import compile_ptx
    except ImportError as exc:
        raise BackendUnavailableError(
            f"numba-cuda is not installed ({exc}); install it with `pip install "
            "ptxforge[numba]`") from None
    return compile_ptx


def compile_to_ptx(fn, signature, *, target: Union[str, int] = "sm_80",
                   lineinfo: bool = True, fastmath: bool = False) -> str:
    """The PTX of kernel ``fn`` (a ``@cuda.jit`` dispatcher or a plain Python function) for
    ``signature`` (a tuple of numba types, or a signature string such as
    ``"void(float32[:], float32)"``), compiled for ``target``'s compute capability."""
    compile_ptx = _compile_ptx()
    tgt = as_target(target)
    pyfunc = getattr(fn, "py_func", fn)
    if not callable(pyfunc):
        raise PtxforgeError(f"numba: expected a @cuda.jit function or a Python function, got "
                            f"{fn!r}")
    try:
        ptx, _ = compile_ptx(pyfunc, signature, lineinfo=lineinfo, fastmath=fastmath,
                             cc=(tgt.major, tgt.minor))
    except Exception as exc:  # numba's typing and lowering errors name the Python line
        raise PtxforgeError(f"numba could not compile {getattr(pyfunc, '__name__', pyfunc)} "
                            f"for {tgt.name}: {type(exc).__name__}: {exc}") from None
    return ptx


def analyze(fn, signature, *, target: Union[str, int] = "sm_80", block: Optional[int] = None,
            compile: bool = True, lineinfo: bool = True, fastmath: bool = False, **kwargs):
    """Compile ``fn`` for ``signature`` without a GPU and analyse its PTX (a
    :class:`~ptxforge.reports.analyze.ModuleAnalysis`); ``block`` is the launch's threads per
    block for occupancy (default 256), ``kwargs`` go to
    :func:`~ptxforge.reports.analyze.analyze_ptx`."""
    from ptxforge.arch.spec import LaunchSpec
    from ptxforge.reports.analyze import analyze_ptx

    spec = LaunchSpec(target=target, block=block)
    ptx = compile_to_ptx(fn, signature, target=target, lineinfo=lineinfo, fastmath=fastmath)
    name = f"<numba {getattr(getattr(fn, 'py_func', fn), '__name__', 'kernel')}>"
    return analyze_ptx(ptx, name, spec, compile=compile, **kwargs)
