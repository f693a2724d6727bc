"""Shared test fixtures: GPU skipping and real-ptxas acceptance (nvJitLink, no GPU needed)."""

from __future__ import annotations

import pytest


def _gpu_reason() -> str | None:
    """None when a GPU and driver are usable, else why not."""
    try:
        from cuda.bindings import driver
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"cuda.bindings.driver not importable: {exc}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # pragma: no cover
        return f"CUDA driver library not loadable: {exc}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed ({err.name}): no NVIDIA GPU or driver on this machine"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device present"
    return None


_GPU_REASON = _gpu_reason()


def pytest_collection_modifyitems(config, items):
    if _GPU_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test skipped: {_GPU_REASON}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
