"""Hypothesis strategies that generate valid kernels (for property tests of the builder and ptxas).
"""
