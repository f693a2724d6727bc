"""The GPU targets.

The one target registry (:mod:`.targets`), the occupancy calculator (:mod:`.occupancy`) and
the measured ptxas register constants (:mod:`.ptxas_model`).

A shared basic: every wing may import it; it imports only :mod:`ptxforge.errors`.
"""
