"""PTX fundamental types and the register classes that hold them.

A :class:`PtxType` is an interned value (``types.f32 is PtxType.get("f32")``).  Every type maps
to exactly one :class:`RegClass`, and every register class has its own name prefix and one
declaration type, so two classes can never emit the same register name with different
declarations (the bug trueno-gpu shipped with ``.u64``/``.b64`` both producing ``%rd0``).

Example::

    >>> from ptxforge.ptx import types
    >>> types.u64.reg_class.prefix, types.u64.reg_class.decl
    ('%rd', 'b64')
    >>> types.f64.units
    2
"""

from __future__ import annotations

import enum

import attrs

__all__ = [
    "Kind",
    "RegClass",
    "PtxType",
    "REG_CLASSES",
    "ALL_TYPES",
    "pred",
    "b8", "b16", "b32", "b64", "b128",
    "u8", "u16", "u32", "u64",
    "s8", "s16", "s32", "s64",
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64",
    "as_type",
    "class_for_decl",
]


class Kind(enum.Enum):
    """What a type's bits mean."""

    PRED = "pred"
    BITS = "bits"
    UNSIGNED = "unsigned"
    SIGNED = "signed"
    FLOAT = "float"


@attrs.frozen(slots=True, kw_only=True, cache_hash=True)  # hashed with every Register: keep it once
class RegClass:
    """A register file namespace: one prefix, one declaration, one width.

    ``units`` is the width in 32-bit allocation units (the unit ptxas counts registers in);
    predicates have their own file and count 1 in it.
    """

    name: str
    prefix: str
    decl: str
    bits: int
    units: int
    is_pred: bool = False

    def __str__(self) -> str:
        return self.name


# One class per (kind of storage, width).  Floating-point values get their own prefixes to keep
# emitted PTX readable; 8-bit and half types live in 16-bit registers (PTX has no 8-bit
# arithmetic, and nvcc keeps .f16/.bf16 in .b16 registers).
_CLASS_PRED = RegClass(name="pred", prefix="%p", decl="pred", bits=1, units=1, is_pred=True)
_CLASS_B16 = RegClass(name="b16", prefix="%rs", decl="b16", bits=16, units=1)
_CLASS_B32 = RegClass(name="b32", prefix="%r", decl="b32", bits=32, units=1)
_CLASS_B64 = RegClass(name="b64", prefix="%rd", decl="b64", bits=64, units=2)
_CLASS_B128 = RegClass(name="b128", prefix="%rq", decl="b128", bits=128, units=4)
_CLASS_F32 = RegClass(name="f32", prefix="%f", decl="f32", bits=32, units=1)
_CLASS_F64 = RegClass(name="f64", prefix="%fd", decl="f64", bits=64, units=2)

REG_CLASSES: tuple[RegClass, ...] = (
    _CLASS_PRED, _CLASS_B16, _CLASS_B32, _CLASS_B64, _CLASS_B128, _CLASS_F32, _CLASS_F64,
)


@attrs.frozen(slots=True, kw_only=True, repr=False, cache_hash=True)  # hashed with every Register
class PtxType:
    """A PTX fundamental type such as ``.f32``; compare with ``is`` or ``==``."""

    name: str
    bits: int
    kind: Kind
    reg_class: RegClass
    lanes: int = 1

    @staticmethod
    def get(name: str) -> "PtxType":
        """Look a type up by name, with or without the leading dot."""
        key = name[1:] if name.startswith(".") else name
        try:
            return _REGISTRY[key]
        except KeyError:
            from ptxforge.errors import PtxTypeError

            known = ", ".join(f".{n}" for n in _REGISTRY)
            raise PtxTypeError(f"unknown PTX type {name!r}; expected one of {known}") from None

    @property
    def ptx(self) -> str:
        """The type as written in an instruction (``.f32``)."""
        return "." + self.name

    @property
    def units(self) -> int:
        """Width in 32-bit register units (8/16/32-bit: 1, 64-bit: 2, 128-bit: 4)."""
        return self.reg_class.units

    @property
    def is_pred(self) -> bool:
        return self.kind is Kind.PRED

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def is_int(self) -> bool:
        return self.kind in (Kind.SIGNED, Kind.UNSIGNED)

    @property
    def is_signed(self) -> bool:
        return self.kind is Kind.SIGNED

    @property
    def is_bits(self) -> bool:
        return self.kind is Kind.BITS

    @property
    def is_packed(self) -> bool:
        """True for the two-lane half types ``.f16x2`` and ``.bf16x2``."""
        return self.lanes > 1

    def __repr__(self) -> str:
        return f"<PtxType .{self.name}>"

    def __str__(self) -> str:
        return "." + self.name


_REGISTRY: dict[str, PtxType] = {}


def _t(name: str, bits: int, kind: Kind, cls: RegClass, lanes: int = 1) -> PtxType:
    t = PtxType(name=name, bits=bits, kind=kind, reg_class=cls, lanes=lanes)
    _REGISTRY[name] = t
    return t


pred = _t("pred", 1, Kind.PRED, _CLASS_PRED)
b8 = _t("b8", 8, Kind.BITS, _CLASS_B16)
b16 = _t("b16", 16, Kind.BITS, _CLASS_B16)
b32 = _t("b32", 32, Kind.BITS, _CLASS_B32)
b64 = _t("b64", 64, Kind.BITS, _CLASS_B64)
b128 = _t("b128", 128, Kind.BITS, _CLASS_B128)
u8 = _t("u8", 8, Kind.UNSIGNED, _CLASS_B16)
u16 = _t("u16", 16, Kind.UNSIGNED, _CLASS_B16)
u32 = _t("u32", 32, Kind.UNSIGNED, _CLASS_B32)
u64 = _t("u64", 64, Kind.UNSIGNED, _CLASS_B64)
s8 = _t("s8", 8, Kind.SIGNED, _CLASS_B16)
s16 = _t("s16", 16, Kind.SIGNED, _CLASS_B16)
s32 = _t("s32", 32, Kind.SIGNED, _CLASS_B32)
s64 = _t("s64", 64, Kind.SIGNED, _CLASS_B64)
f16 = _t("f16", 16, Kind.FLOAT, _CLASS_B16)
bf16 = _t("bf16", 16, Kind.FLOAT, _CLASS_B16)
f16x2 = _t("f16x2", 32, Kind.FLOAT, _CLASS_B32, lanes=2)
bf16x2 = _t("bf16x2", 32, Kind.FLOAT, _CLASS_B32, lanes=2)
f32 = _t("f32", 32, Kind.FLOAT, _CLASS_F32)
f64 = _t("f64", 64, Kind.FLOAT, _CLASS_F64)

ALL_TYPES: tuple[PtxType, ...] = tuple(_REGISTRY.values())

_DECL_TO_CLASS = {
    # Declaration types seen in PTX from any compiler, mapped onto the allocation class.
    "pred": _CLASS_PRED,
    "b8": _CLASS_B16, "u8": _CLASS_B16, "s8": _CLASS_B16,
    "b16": _CLASS_B16, "u16": _CLASS_B16, "s16": _CLASS_B16, "f16": _CLASS_B16,
    "bf16": _CLASS_B16,
    "b32": _CLASS_B32, "u32": _CLASS_B32, "s32": _CLASS_B32, "f16x2": _CLASS_B32,
    "bf16x2": _CLASS_B32,
    "b64": _CLASS_B64, "u64": _CLASS_B64, "s64": _CLASS_B64,
    "b128": _CLASS_B128,
    "f32": _CLASS_F32,
    "f64": _CLASS_F64,
}


def as_type(value: "PtxType | str") -> PtxType:
    """Accept a :class:`PtxType` or its name (``"f32"`` or ``".f32"``)."""
    if isinstance(value, PtxType):
        return value
    if isinstance(value, str):
        return PtxType.get(value)
    from ptxforge.errors import PtxTypeError

    raise PtxTypeError(f"expected a PTX type or its name, got {type(value).__name__} {value!r}")


def class_for_decl(decl: str) -> RegClass:
    """The allocation class of a register declared with type ``decl`` (``"u32"``, ``".f64"``)."""
    key = decl[1:] if decl.startswith(".") else decl
    try:
        return _DECL_TO_CLASS[key]
    except KeyError:
        from ptxforge.errors import PtxTypeError

        raise PtxTypeError(f"no register class for declaration type .{key}") from None
