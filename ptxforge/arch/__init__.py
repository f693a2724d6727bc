"""The GPU targets.

The one target registry (:mod:`.targets`) and the occupancy calculator (:mod:`.occupancy`).

A shared basic: every wing may import it; it imports only :mod:`ptxforge.errors`.
"""
