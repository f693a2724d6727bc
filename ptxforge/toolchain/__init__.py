"""What the compilers say.

Backends (ptxas, nvJitLink, driver), isolation, ptxas logs, cubins, caps, sweeps, SASS.

Imports :mod:`ptxforge.ptx` and :mod:`ptxforge.arch` only.
"""
