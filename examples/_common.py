"""Shared by the examples: import ptxforge from a checkout, pick a target, report no-GPU runs."""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import ptxforge  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptxforge import emit  # noqa: E402
from ptxforge.errors import PtxforgeError  # noqa: E402
from ptxforge.launch.device import device_info, gpu_unavailable_reason  # noqa: E402

__all__ = ["build_for_device", "report_no_gpu"]


def build_for_device(factory, **kwargs):
    """Build the kernel for the GPU present (its own sm_XX), or for sm_80 without one.

    Returns ``(module, info)``; ``info`` is None when no GPU can be used.  Falls back to sm_80
    PTX (which the driver JIT-compiles for any newer GPU) if the builder rejects the target.
    """
    if gpu_unavailable_reason() is not None:
        return factory(target="sm_80", **kwargs), None
    info = device_info()
    try:
        return factory(target=info.target, **kwargs), info
    except PtxforgeError:
        return factory(target="sm_80", **kwargs), info


def report_no_gpu(name: str, module) -> bool:
    """Print one line and return True when there is no GPU to run ``module`` on."""
    reason = gpu_unavailable_reason()
    if reason is None:
        return False
    ptx = emit(module)
    entry = module.entries[0]
    print(f"{name}: built {entry.name} ({len(ptx)} bytes of PTX, {len(ptx.splitlines())} lines, "
          f"{len(entry.instructions)} instructions, {module.target}); running it needs a GPU: "
          f"{reason.split(':', 1)[0]}")
    return True
