"""ptxforge: write NVIDIA PTX kernels in Python and understand their register pressure."""

from . import ir, types
from .emit import emit
from .errors import (
    BackendUnavailableError,
    BuildError,
    CompileError,
    DeviceError,
    LaunchError,
    ParseError,
    PtxforgeError,
    PtxTypeError,
    UnsupportedError,
)

__version__ = "0.1.0"

__all__ = [
    "ir",
    "types",
    "emit",
    "PtxforgeError",
    "PtxTypeError",
    "BuildError",
    "UnsupportedError",
    "ParseError",
    "CompileError",
    "BackendUnavailableError",
    "DeviceError",
    "LaunchError",
]
