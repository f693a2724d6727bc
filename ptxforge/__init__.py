"""ptxforge: write NVIDIA PTX kernels in Python and understand their register pressure.

The front doors are :class:`KernelBuilder` (write kernels in Python) and :func:`parse` (read
PTX from any compiler); both produce the same IR (:class:`Module`, :class:`Kernel`).  From
there: :func:`emit` writes PTX, :func:`analyze_pressure` runs liveness and reports the peak,
:func:`compile_ptx` asks ptxas what it assigned, :func:`occupancy` says what that costs,
:func:`compare_with_ptxas` puts estimate and ptxas side by side, :func:`analyze_ptx` does all
of it for a PTX file, and :func:`sass_report` adds the physical registers live in the SASS.
:func:`load` runs a module on a GPU (the driver is imported only then).

This top level holds the curated public API.  Everything else lives in the wing that owns it
(see ``docs/architecture.md``)::

    ptxforge.ptx        types, IR, ISA table, emitter, lexer and parser, directives, demangling
    ptxforge.dsl        KernelBuilder and its op families, ready-made kernels
    ptxforge.analysis   CFG, liveness, interference, pressure, mix, attribution
    ptxforge.toolchain  backends, compile, isolation, ptxas log, cubin, caps, sweeps, SASS
    ptxforge.reports    analyze, estimate vs ptxas, variants, occupancy/sweep/SASS reports
    ptxforge.launch     device, arguments, arrays, module image, timing (GPU only)
    ptxforge.testing    hypothesis strategies that generate valid kernels
    ptxforge.arch       the target registry and the occupancy calculator

Example::

    >>> from ptxforge import KernelBuilder, analyze_pressure
    >>> kb = KernelBuilder("k", target="sm_80")
    >>> kb.ret()
    >>> analyze_pressure(kb.build().kernels[0]).peak.units
    0
"""

from typing import TYPE_CHECKING

from .errors import (
    BackendUnavailableError,
    BuildError,
    CompileError,
    CompilerCrashError,
    DeviceError,
    LaunchError,
    ParseError,
    PtxforgeError,
    PtxTypeError,
    UnsupportedError,
)

# Each public name and the module that defines it, imported on first use (PEP 562), so that
# ``import ptxforge`` costs a few milliseconds and a command imports only what it runs
# (the CLI's analyze --no-compile never loads networkx, the compilers or the builder).
_LAZY = {
    "analyze_pressure": "analysis.pressure", "PressureReport": "analysis.pressure",
    "Occupancy": "arch.occupancy", "occupancy": "arch.occupancy",
    "register_cliffs": "arch.occupancy",
    "Target": "arch.targets", "target": "arch.targets", "LaunchSpec": "arch.spec",
    "KernelBuilder": "dsl.builder", "ModuleBuilder": "dsl.builder",
    "emit": "ptx.emit", "Kernel": "ptx.ir", "Module": "ptx.ir",
    "parse": "ptx.parse", "parse_file": "ptx.parse",
    "KernelAnalysis": "reports.analyze", "ModuleAnalysis": "reports.analyze",
    "analyze_module": "reports.analyze", "analyze_ptx": "reports.analyze",
    "analyze_cubin": "reports.cubin",
    "Comparison": "reports.estimate", "compare_with_ptxas": "reports.estimate",
    "SassReport": "reports.sass", "sass_report": "reports.sass",
    "compare_variants": "reports.variants",
    "CompileOptions": "toolchain.compile", "CompileRequest": "toolchain.compile",
    "KernelStats": "toolchain.compile",
    "compile_ptx": "toolchain.compile",
    "sweep": "toolchain.sweep",
    "profile_kernel": "launch.profile", "find_races": "launch.profile",
}

if TYPE_CHECKING:  # for type checkers and editors: the names as plain imports
    from .analysis.pressure import PressureReport, analyze_pressure
    from .arch.occupancy import Occupancy, occupancy, register_cliffs
    from .arch.spec import LaunchSpec
    from .arch.targets import Target, target
    from .dsl.builder import KernelBuilder, ModuleBuilder
    from .launch.profile import find_races, profile_kernel
    from .ptx.emit import emit
    from .ptx.ir import Kernel, Module
    from .ptx.parse import parse, parse_file
    from .reports.analyze import KernelAnalysis, ModuleAnalysis, analyze_module, analyze_ptx
    from .reports.cubin import analyze_cubin
    from .reports.estimate import Comparison, compare_with_ptxas
    from .reports.sass import SassReport, sass_report
    from .reports.variants import compare_variants
    from .toolchain.compile import CompileOptions, CompileRequest, KernelStats, compile_ptx
    from .toolchain.sweep import sweep


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562) and keep the name here."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'ptxforge' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


def load(module_or_ptx, device: int = 0, **kwargs):
    """JIT-load a module (IR, PTX text or cubin) on a GPU; see :func:`ptxforge.launch.loader.load`.

    The GPU layer is imported here, on first use, so ``import ptxforge`` needs no driver.
    """
    from .launch.loader import load as _load

    return _load(module_or_ptx, device, **kwargs)


__version__ = "0.1.0"

__all__ = [
    # front doors and the IR they produce
    "KernelBuilder", "ModuleBuilder", "parse", "parse_file", "Module", "Kernel", "emit",
    # analysis (no compiler)
    "analyze_pressure", "PressureReport",
    # toolchain (ptxas)
    "compile_ptx", "CompileOptions", "CompileRequest", "KernelStats", "sweep",
    # reports
    "analyze_ptx", "analyze_module", "ModuleAnalysis", "KernelAnalysis", "compare_with_ptxas",
    "Comparison", "compare_variants", "sass_report", "SassReport", "analyze_cubin",
    # targets, the launch an analysis assumes, and occupancy
    "Target", "target", "LaunchSpec", "occupancy", "Occupancy", "register_cliffs",
    # GPU, and the PTX interpreter's profile and race check
    "load", "profile_kernel", "find_races",
    # errors
    "PtxforgeError", "PtxTypeError", "BuildError", "UnsupportedError", "ParseError",
    "CompileError", "CompilerCrashError", "BackendUnavailableError", "DeviceError",
    "LaunchError",
]
