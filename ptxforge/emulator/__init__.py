"""A PTX interpreter: run kernels on NumPy arrays without a GPU (``load(..., device="emulator")``).

:class:`~ptxforge.emulator.device.Emulator` runs a module's kernels over grids of blocks,
vectorised with NumPy over the threads of a wave of blocks; :class:`EmulationError` is what it
raises for an instruction it does not support, an out-of-bounds access or a deadlock.  See
docs/emulator.md for what it covers and what it refuses.
"""

from .device import Emulator
from .memory import EmulationError

__all__ = ["Emulator", "EmulationError"]
