"""CUDA C++ sources (``.cu``) to PTX with NVRTC, as the commands read them: line info, the target's arch, the user's flags.

``ptxforge analyze k.cu -- -DTILE=8 -I include`` compiles ``k.cu`` with NVRTC
(``cuda.bindings.nvrtc`` and the ``nvidia-cuda-nvrtc`` wheel, both dependencies) to PTX for
the target (``--arch``, default sm_80) with ``-lineinfo``, so every report names the ``.cu``
lines, and then analyses that PTX as any other.  The flags after ``--`` go to NVRTC as given
(``-D``, ``-U``, ``-I``, ``-std=c++20``, ``-maxrregcount=N`` …); the source's own folder and
the CUDA headers of the nvidia wheels (the runtime's and CCCL's: cub, thrust, cuda::) are on
the include path.  A source NVRTC refuses is a :class:`CudaSourceError` with one line per
diagnostic (``k.cu:7: error: identifier "TILE" is undefined``), the echoed source and caret
lines left out.

Example::

    >>> ptx = compile_cuda(b"__global__ void k(float* x) { x[0] = 1; }", "k.cu")  # doctest: +SKIP
    >>> ptx.count(".entry")                                                    # doctest: +SKIP
    1
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Optional, Union

from ptxforge.arch.targets import target as as_target
from ptxforge.errors import PtxforgeError

__all__ = ["DEFAULT_TARGET", "CudaSourceError", "compile_cuda", "diagnostics", "is_cuda_source"]

#: The target of a ``.cu`` compiled without ``--arch`` (a PTX file says its own).
DEFAULT_TARGET = "sm_80"

# NVRTC's diagnostic: "k.cu(7): error: identifier ..." (also warning, remark, catastrophic error)
_DIAG = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error|warning|"
                   r"remark|note)\b(?P<rest>.*)$")


class CudaSourceError(PtxforgeError):
    """NVRTC refused a CUDA source; the message has one line per diagnostic."""


def is_cuda_source(path: Union[str, os.PathLike]) -> bool:
    """Whether ``path`` names a CUDA C++ source by its suffix (``.cu``).

    Example::

        >>> is_cuda_source("kernels/gemm.cu"), is_cuda_source("gemm.ptx")
        (True, False)
    """
    return str(path).endswith(".cu")


def diagnostics(log: str, path: str) -> list:
    """NVRTC's log as ``file:line: kind: message`` lines (the echoed source and the caret
    under it dropped; an option error, which names no line, kept as it is).

    Example::

        >>> diagnostics('k.cu(3): error: identifier "TILE" is undefined\\n  x *= TILE;\\n'
        ...             '       ^\\n\\n1 error detected in the compilation of "k.cu".', "k.cu")
        ['k.cu:3: error: identifier "TILE" is undefined']
    """
    out = []
    for line in log.splitlines():
        m = _DIAG.match(line.strip())
        if m:
            out.append(f"{m.group('file')}:{m.group('line')}: {m.group('kind')}{m.group('rest')}")
        elif line.strip().startswith(("nvrtc: error", "error:")) or "invalid option" in line:
            out.append(f"{path}: {line.strip()}")
    return out


def _include_dirs(path: str) -> list:
    """The source's folder, then the CUDA headers of the nvidia wheels (runtime and CCCL)."""
    out = [str(Path(path).resolve().parent)] if path not in ("", "<stdin>") else []
    try:
        import nvidia
    except ImportError:  # pragma: no cover - cuda wheels are dependencies
        return out
    for root in nvidia.__path__:
        for inc in sorted(Path(root).glob("cu[0-9]*/include")):
            out += [str(p) for p in (inc / "cccl", inc) if p.is_dir()]
    return out


def _log(nvrtc, prog) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def compile_cuda(source: Union[str, bytes], path: str, target: Optional[str] = None,
                 flags: Sequence[str] = ()) -> str:
    """PTX of the CUDA C++ ``source`` (read from ``path``, the name its ``.loc`` lines carry)
    for ``target`` (default :data:`DEFAULT_TARGET`), compiled by NVRTC with ``-lineinfo``
    and ``flags``; :class:`CudaSourceError` with NVRTC's diagnostics when it does not
    compile, :class:`~ptxforge.errors.BackendUnavailableError` without NVRTC.

    Example::

        >>> ptx = compile_cuda("__global__ void k(int* x) { x[0] = N; }", "k.cu",
        ...                    "sm_86", ["-DN=3"])                          # doctest: +SKIP
        >>> ".target sm_86" in ptx                                         # doctest: +SKIP
        True
    """
    from ptxforge.errors import BackendUnavailableError

    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise BackendUnavailableError(
            f"{path}: compiling CUDA C++ needs NVRTC: pip install cuda-bindings "
            "nvidia-cuda-nvrtc (or give the PTX: nvcc -ptx -lineinfo)") from None
    spec = as_target(target or DEFAULT_TARGET)
    text = source.encode() if isinstance(source, str) else source
    opts = [f"-arch=compute_{spec.name[3:]}", "-lineinfo", *flags,
            *(f"-I{d}" for d in _include_dirs(path))]
    err, prog = nvrtc.nvrtcCreateProgram(text, path.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:  # pragma: no cover - out of memory only
        raise CudaSourceError(f"{path}: NVRTC could not start: {err.name}")
    try:
        raw = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(raw), raw)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            lines = diagnostics(_log(nvrtc, prog), path) or [f"{path}: {err.name}"]
            given = f" with {' '.join(flags)}" if flags else ""
            raise CudaSourceError(f"NVRTC could not compile {path} for {spec.name}{given}:\n"
                                  + "\n".join(lines))
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetPTX(prog, buf)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()
