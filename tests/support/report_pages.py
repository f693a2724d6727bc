"""HTML report pages built once per test session for the report and browser tests.

``page(name)`` writes and returns the path of a report of: ``"gemm"`` (the corpus's sgemm
kernels, 608 and 1,208 PTX instructions, with -lineinfo and the SASS overlay), ``"templates"``
(four templated kernels: the index table), ``"dsl"`` (tests/data/report_dsl.py, a DSL script),
``"cubin"`` (gemm compiled to a cubin with line info), ``"advise"`` (sgemm_8x8 from the .cu
with the sweep at spill budget :data:`ADVISE_BUDGET` and the advise section), ``"spills"``
(sgemm_8x8 with ``.maxnreg 64`` written into its PTX: it spills) and ``"memory"`` (the naive
and tiled transposes of tests/support/memory_builders.py, through NVRTC: the Memory section).
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from corpus_util import CORPUS_DIR, corpus_ptx, stable_source

__all__ = ["ADVISE_BUDGET", "DATA", "page", "page_text"]

#: The spill budget of the "advise" page's second recommendation (bytes).
ADVISE_BUDGET = 200

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
    if name in ("advise", "spills"):
        return _gemm_cu_page(name, dirs)
    if name == "memory":
        from ptxforge.frontends.cuda_source import compile_cuda

        from memory_builders import CUDA_TRANSPOSES

        # the same path in every run: NVRTC's and ptxas's runs are the tool memo's to answer
        cu = stable_source(CUDA_TRANSPOSES, "transposes.cu")
        ptx = compile_cuda(CUDA_TRANSPOSES, str(cu), "sm_80")
        return html_report(ptx, "transposes.ptx",
                           page=PageOptions(source_dirs=(str(cu.parent),)))
    raise KeyError(name)


def _gemm_cu_page(name: str, dirs) -> str:
    """The sgemm_8x8 pages read from the .cu (NVRTC, -lineinfo)."""
    import attrs

    from ptxforge.frontends.cuda_source import compile_cuda
    from ptxforge.ptx.directives import with_directives
    from ptxforge.reports.html import html_report

    path = str(CORPUS_DIR / "gemm.cu")
    text = (CORPUS_DIR / "gemm.cu").read_text()
    ptx = compile_cuda(text, path, "sm_80")
    if name == "spills":
        return html_report(with_directives(ptx, "sgemm_8x8", {"maxnreg": 64}), "gemm.cu",
                           kernel="sgemm_8x8", page=dirs)
    opts = attrs.evolve(dirs, sweep=True, spill_budget=ADVISE_BUDGET, advise=True,
                        cuda_source=(text, path, lambda t: compile_cuda(t, path, "sm_80")))
    return html_report(ptx, "gemm.cu", kernel="sgemm_8x8", page=opts)


def page(name: str) -> Path:
    """The report ``name`` written to a file (for the browser)."""
    path = _DIR / f"{name}.html"
    if not path.exists():
        path.write_text(page_text(name), encoding="utf-8")
    return path
