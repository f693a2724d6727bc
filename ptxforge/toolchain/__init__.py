"""What the compilers say: backends (ptxas, nvJitLink, driver), isolation, ptxas logs, cubins, caps, sweeps, SASS.

Imports :mod:`ptxforge.ptx` and :mod:`ptxforge.arch` only.
"""
