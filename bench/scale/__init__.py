"""The scale benchmark's corpus: CUDA C++ written here, compiled to PTX once and cached.

``sources`` writes the CUDA C++ of every file class; ``corpus`` compiles it (NVRTC, or nvcc for
the thrust class) into a cache folder keyed by the generator sources and the compiler versions.
``bench/bench_scale.py`` times ptxforge against ptxas and nvdisasm on it.
"""

__all__ = ["CLASSES"]

#: The file classes, in the order the benchmark prints them.
CLASSES = ("cub", "thrust", "many", "big", "gemm", "small")
