"""Front ends: kernels from Triton and numba-cuda, Triton's cache, and files and folders of them.

``triton`` (:func:`ptxforge.frontends.triton.analyze`: a ``@triton.jit`` kernel compiled for a
target without a GPU), ``triton_cache`` (the PTX and metadata in ``~/.triton/cache``),
``numba`` (:func:`ptxforge.frontends.numba.analyze`: a ``@cuda.jit`` function for a
signature) and ``inputs`` (files, folders and Triton caches to per-kernel figures, for
``ptxforge check`` and ``ptxforge diff``).  Triton and numba are optional extras, imported
only when called.  This wing sits on ``reports`` and below.
"""

__all__: list = []
