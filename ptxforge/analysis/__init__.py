"""What the PTX needs before any compiler runs.

CFG, liveness, interference, pressure, instruction mix, attribution.

Works on the IR alone (:mod:`ptxforge.ptx`); it never compiles.
"""
