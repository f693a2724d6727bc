"""Read PTX text from any compiler into the IR: :func:`parse` and :func:`parse_file`.

The reader is split by concept: :mod:`.reader` (module-level directives and functions),
:mod:`.cursor` (parse state, primitive readers, errors), :mod:`.scopes` (blocks and labels),
:mod:`.lineinfo` (``.file`` / ``.loc`` / ``.debug_str``) and :mod:`.instructions`
(instructions and operands).

Example::

    >>> from ptxforge.ptx.parse import parse
    >>> parse(".version 8.0\\n.target sm_80\\n.address_size 64\\n"
    ...       ".visible .entry k() { ret; }").kernels[0].name
    'k'
"""

from .reader import parse, parse_file

__all__ = ["parse", "parse_file"]
