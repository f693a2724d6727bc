"""HTML report pages built once per test session for the report and browser tests.

``page(name)`` writes and returns the path of a report of: ``"gemm"`` (the corpus's sgemm
kernels, 608 and 1,208 PTX instructions, with -lineinfo and the SASS overlay), ``"templates"``
(four templated kernels: the index table), ``"dsl"`` (tests/data/report_dsl.py, a DSL script)
``"cubin"`` (gemm compiled to a cubin with line info) and ``"memory"`` (the naive and tiled
transposes of tests/support/memory_kernels.py, through NVRTC: the Memory section).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from corpus_util import CORPUS_DIR, corpus_ptx

__all__ = ["DATA", "page", "page_text"]

DATA = Path(__file__).parents[1] / "data"
_DIR = Path(tempfile.mkdtemp(prefix="ptxforge-report-"))


@functools.cache
def page_text(name: str) -> str:
    """The HTML of report ``name`` (see the module docstring)."""
    from ptxforge.cli.report import load_python_module
    from ptxforge.reports.html import PageOptions, html_report

    dirs = PageOptions(source_dirs=(str(CORPUS_DIR),))
    if name == "gemm":
        return html_report(corpus_ptx("gemm", "sm_80", True), "gemm.ptx", page=dirs)
    if name == "templates":
        return html_report(corpus_ptx("templates", "sm_80", True), "templates.ptx",
                           page=dirs)
    if name == "dsl":
        module = load_python_module(str(DATA / "report_dsl.py"))
        return html_report(module, "report_dsl.py")
    if name == "cubin":
        import attrs

        from ptxforge.toolchain.compile import CompileOptions, compile_ptx

        opts = attrs.evolve(CompileOptions(), line_info=True)
        compiled = compile_ptx(corpus_ptx("gemm", "sm_80", True), "sm_80", options=opts)
        return html_report(compiled.cubin, "gemm.cubin", page=dirs)
    if name == "memory":
        from memory_kernels import CUDA_TRANSPOSES

        from ptxforge.frontends.cuda_source import compile_cuda

        cu = _DIR / "transposes.cu"
        cu.write_text(CUDA_TRANSPOSES)
        ptx = compile_cuda(CUDA_TRANSPOSES, str(cu), "sm_80")
        return html_report(ptx, "transposes.ptx", page=PageOptions(source_dirs=(str(_DIR),)))
    raise KeyError(name)


def page(name: str) -> Path:
    """The report ``name`` written to a file (for the browser)."""
    path = _DIR / f"{name}.html"
    if not path.exists():
        path.write_text(page_text(name), encoding="utf-8")
    return path
