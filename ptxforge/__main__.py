"""``python -m ptxforge``: the ``ptxforge`` command (see :mod:`ptxforge.cli`)."""

import sys

from ptxforge.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
