"""Run kernels on a GPU: device, arguments and arrays, the module image, timing.

Imported lazily (``ptxforge.load``); ``import ptxforge`` never touches a GPU or driver.
"""
