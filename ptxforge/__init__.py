"""ptxforge: write NVIDIA PTX kernels in Python and understand their register pressure.

The front doors are :class:`KernelBuilder` (write kernels in Python) and :func:`parse` (read
PTX from any compiler); both produce the same IR (:mod:`ptxforge.ptx.ir`).  From there:
:func:`emit` writes PTX, :func:`analyze_pressure` runs liveness and reports the peak,
:func:`compile_ptx` asks ptxas what it assigned, :func:`occupancy` says what that costs,
:func:`compare` puts estimate and ptxas side by side, and :func:`sass_report` adds the physical
registers live in the SASS (read with nvdisasm).  GPU-only paths (:func:`load`) import
the driver lazily; everything else works on a machine without a GPU.
"""

from .ptx import ir, isa, types
from .dsl import kernels
from .reports.analyze import ModuleAnalysis, KernelAnalysis, analyze_module, analyze_ptx
from .analysis.attribution import Attribution, attribute_registers, describe_loc, first_definitions
from .dsl.builder import KernelBuilder, ModuleBuilder
from .analysis.cfg import ControlFlowGraph, build_cfg
from .reports.estimate import Comparison, Estimate, compare
from .toolchain.compile import (CompileOptions, Compiled, KernelStats, available_backends,
                                backend_status, compile_many, compile_ptx)
from .toolchain.cubin import CubinInfo, read_cubin
from .ptx.demangle import demangle, demangle_function
from .ptx.emit import emit
from .errors import (BackendUnavailableError, BuildError, CompileError, DeviceError, LaunchError,
                     ParseError, PtxforgeError, PtxTypeError, UnsupportedError)
from .toolchain.isolate import CompilerCrashError
from .analysis.interference import (InterferenceGraph, build_interference, greedy_coloring,
                                    max_clique, verify_coloring)
from .analysis.liveness import Liveness, analyze_liveness
from .analysis.mix import InstructionMix, SelpBreakdown, instruction_mix, module_mix
from .arch.occupancy import (ArchProps, Occupancy, RegisterCliffs, arch_props, occupancy,
                             register_cliffs)
from .ptx.parse import parse, parse_file
from .analysis.pressure import PressureReport, analyze_pressure
from .toolchain.ptxas_log import PtxasLog, parse_ptxas_log
from .toolchain.sass import (SassFunction, SassInstruction, SassLiveness, find_nvdisasm,
                             sass_liveness)
from .reports.sass import SassReport, sass_report
from .reports.cubin import CubinReport, analyze_cubin
from .toolchain.sweep import Sweep, sweep
from .reports.variants import compare_variants


def load(module_or_ptx, device: int = 0, **kwargs):
    """JIT-load a module (IR, PTX text or cubin) on a GPU; see :func:`ptxforge.launch.loader.load`."""
    from .launch.loader import load as _load

    return _load(module_or_ptx, device, **kwargs)


__version__ = "0.1.0"

__all__ = [
    # IR and types
    "ir", "types", "isa", "kernels",
    # front doors
    "KernelBuilder", "ModuleBuilder", "parse", "parse_file",
    # emit
    "emit",
    # analysis
    "build_cfg", "ControlFlowGraph", "analyze_liveness", "Liveness", "analyze_pressure",
    "PressureReport", "build_interference", "InterferenceGraph", "greedy_coloring",
    "verify_coloring", "max_clique", "instruction_mix", "module_mix", "InstructionMix",
    "SelpBreakdown", "attribute_registers", "first_definitions", "Attribution", "describe_loc",
    "demangle", "demangle_function",
    "analyze_module", "analyze_ptx", "ModuleAnalysis", "KernelAnalysis", "compare_variants",
    # compile, occupancy, comparison
    "compile_ptx", "compile_many", "CompileOptions", "Compiled", "KernelStats",
    "available_backends", "backend_status", "parse_ptxas_log", "PtxasLog", "read_cubin",
    "CubinInfo", "occupancy", "register_cliffs", "Occupancy", "RegisterCliffs", "ArchProps",
    "arch_props", "compare", "Comparison", "Estimate", "sweep", "Sweep",
    # SASS ground truth (nvdisasm)
    "sass_liveness", "SassLiveness", "SassFunction", "SassInstruction", "find_nvdisasm",
    "sass_report", "SassReport", "analyze_cubin", "CubinReport",
    # GPU
    "load",
    # errors
    "PtxforgeError", "PtxTypeError", "BuildError", "UnsupportedError", "ParseError",
    "CompileError", "BackendUnavailableError", "DeviceError", "LaunchError",
    "CompilerCrashError",
]
