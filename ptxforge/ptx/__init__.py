"""PTX itself.

Types, the IR, the ISA table, the emitter, the lexer and parser, directives, C++ name demangling.

The lowest wing: it imports nothing from the others (only :mod:`ptxforge.errors` and
:mod:`ptxforge.arch`).
"""
