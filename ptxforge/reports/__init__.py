"""What a user reads.

Analyze, the estimate against ptxas, variants, occupancy/sweep and SASS reports, text renderers.

The only wing that combines the others (analysis, toolchain, ptx).
"""
