"""Write kernels in Python.

:class:`~ptxforge.dsl.builder.KernelBuilder`, its op families, ready-made kernels.

Builds :mod:`ptxforge.ptx` IR; nothing else imports this wing except the front door.
"""
