"""Polynomials over the thread index and uniform symbols: the values of PTX addresses.

A value is an :class:`Affine` polynomial over named symbols: the thread indices ``tid.x``,
``tid.y``, ``tid.z`` (which differ between the threads of a warp) and *uniform* symbols, the
same for every thread of a warp: ``ctaid.x`` …, parameters (``A``: the value ``ld.param``
read), shared and local variables (their address), loop-carried registers and opaque uniform
values (named after their register).  A monomial has degree at most one in the thread
indices: a product of two thread-dependent values is :class:`NotAffine`, which carries the
reason.  :mod:`ptxforge.analysis.address_eval` computes these values from a kernel's PTX.

Example::

    >>> from ptxforge.analysis.affine import Affine
    >>> t, c = Affine.symbol("tid.x"), Affine.symbol("ctaid.x")
    >>> str(t.scale(4) + c.scale(1024) + Affine.const(8))
    '4*tid.x + 1024*ctaid.x + 8'
    >>> t.times(t).reason
    'a product of two thread-dependent values'
"""

from __future__ import annotations

import attrs

__all__ = ["THREAD_SYMBOLS", "Affine", "NotAffine", "Value"]

#: The symbols that differ between the threads of a warp.
THREAD_SYMBOLS = ("tid.x", "tid.y", "tid.z")


@attrs.frozen(slots=True, kw_only=True)
class Affine:
    """A polynomial: ``terms`` maps a monomial (a sorted tuple of symbol names; ``()`` for
    the constant) to its integer coefficient; zero coefficients are left out."""

    terms: tuple = ()

    @staticmethod
    def of(mapping: dict) -> Affine:
        """The polynomial of a {monomial: coefficient} dict (zeros dropped, sorted)."""
        return Affine(terms=tuple(sorted((m, c) for m, c in mapping.items() if c)))

    @staticmethod
    def const(value: int) -> Affine:
        """The constant ``value``."""
        return Affine.of({(): int(value)})

    @staticmethod
    def symbol(name: str) -> Affine:
        """The symbol ``name`` with coefficient 1."""
        return Affine.of({(name,): 1})

    def as_dict(self) -> dict:
        """The terms as a dict."""
        return dict(self.terms)

    def __add__(self, other: Affine) -> Affine:
        d = self.as_dict()
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return Affine.of(d)

    def scale(self, k: int) -> Affine:
        """This polynomial times the integer ``k``."""
        return Affine.of({m: c * k for m, c in self.terms})

    def __sub__(self, other: Affine) -> Affine:
        return self + other.scale(-1)

    def times(self, other: Affine) -> Affine | NotAffine:
        """The product, or NotAffine when a monomial would hold two thread indices."""
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2))
                if sum(s in THREAD_SYMBOLS for s in m) > 1:
                    return NotAffine(reason="a product of two thread-dependent values")
                d[m] = d.get(m, 0) + c1 * c2
        return Affine.of(d)

    @property
    def constant(self) -> int | None:
        """The value when the polynomial is a constant, else None."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    @property
    def uniform(self) -> bool:
        """True when no monomial holds a thread index (the same in every thread of a warp)."""
        return not any(s in THREAD_SYMBOLS for m, _ in self.terms for s in m)

    def thread_part(self) -> dict:
        """The monomials holding a thread index, with their coefficients."""
        return {m: c for m, c in self.terms if any(s in THREAD_SYMBOLS for s in m)}

    def offset(self) -> int:
        """The constant term."""
        return self.as_dict().get((), 0)

    def symbols(self) -> set:
        """Every symbol named in a monomial."""
        return {s for m, _ in self.terms for s in m}

    def __str__(self) -> str:
        if not self.terms:
            return "0"

        def rank(item):
            m, _ = item
            thread = any(s in THREAD_SYMBOLS for s in m)
            block = any(s.startswith(("ctaid.", "nctaid.")) for s in m)
            return (not m, not thread, not block, m)

        parts = []
        for m, c in sorted(self.terms, key=rank):
            name = "*".join(m)
            if not m:
                text = str(abs(c))
            elif abs(c) == 1:
                text = name
            else:
                text = f"{abs(c)}*{name}"
            parts.append(("-" if c < 0 else "+", text))
        out = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        return out + "".join(f" {sign} {text}" for sign, text in parts[1:])


@attrs.frozen(slots=True, kw_only=True)
class NotAffine:
    """A value that is not an affine function of the thread index, and why."""

    reason: str


Value = Affine | NotAffine
