"""``ptxforge compare: two variants side by side with deltas."""

from __future__ import annotations

from ptxforge.cli.common import (
    EXIT_OK,
    InputError,
    UsageError,
    add_common,
    count_type,
    emit,
    pair_type,
    read_source,
    refuse_compiler_flags,
    request_from_args,
    spec_from_args,
)

__all__ = ["add", "run"]


def add(sub) -> None:
    """Add the ``compare`` sub-command to the sub-parsers ``sub``."""
    c = sub.add_parser("compare", help="two variants side by side with deltas",
                       description="Compare two PTX files kernel by kernel (matched by name; "
                                   "two single-kernel files pair their kernels).")
    c.add_argument("file_a", metavar="A.ptx")
    c.add_argument("file_b", metavar="B.ptx")
    add_common(c)
    c.add_argument("--no-compile", action="store_true", help="skip ptxas")
    c.add_argument("--pair", action="append", default=[], metavar="A=B", type=pair_type,
                   help="compare kernel A of A.ptx with kernel B of B.ptx (repeatable); "
                        "default: kernels with the same name")
    c.add_argument("--kernel-a", metavar="NAME", help="with --kernel-b: one pair, as --pair")
    c.add_argument("--kernel-b", metavar="NAME", help="with --kernel-a: one pair, as --pair")
    c.add_argument("--top", default=10, type=count_type,
                   help="changed opcodes listed per kernel (default 10, 0: all)")


def _pairs(args) -> list:
    pairs = list(args.pair)
    if (args.kernel_a is None) != (args.kernel_b is None):
        raise UsageError("compare: --kernel-a and --kernel-b go together (or use --pair A=B)")
    if args.kernel_a is not None:
        pairs.append((args.kernel_a, args.kernel_b))
    if pairs and args.kernel:
        raise UsageError("compare: --kernel selects by a common name; with --pair or "
                          "--kernel-a/--kernel-b name the kernels of each side there")
    return pairs


def _names(wanted) -> list:
    return [wanted] if isinstance(wanted, str) else list(wanted)


def _only(analysis, wanted, name: str):
    """``analysis`` keeping the kernels ``wanted`` (all when None), in their order, as read
    from the file ``name``."""
    import attrs

    if wanted is None:
        return attrs.evolve(analysis, file=name)
    by_name = {k.name: k for k in analysis.kernels}
    return attrs.evolve(analysis, file=name,
                        kernels=tuple(by_name[n] for n in dict.fromkeys(_names(wanted))))


def run(args) -> int:
    """Run the command; the exit status."""
    from ptxforge.reports.analyze import analyze_ptx
    from ptxforge.reports.variants import compare_variants

    refuse_compiler_flags(args, "compare")
    if args.file_a == "-" and args.file_b == "-":
        raise UsageError("compare: only one of A and B can be '-' (standard input can be "
                          "read once)")
    pairs = _pairs(args)
    inputs = []
    for i, path in enumerate((args.file_a, args.file_b)):
        data, name = read_source(path, args)
        if data[:4] == b"\x7fELF":
            raise InputError(f"{name} is a cubin: compare reads PTX (analyze reads a cubin)")
        inputs.append((data, name, [p[i] for p in pairs] if pairs else args.kernel))
    spec = spec_from_args(args)
    kw = dict(compile=not args.no_compile, strict=not args.lenient,
              request=request_from_args(args))
    (da, na, wa), (db, nb, wb) = inputs
    if da == db:   # one input: analyse (and compile) it once, for both sides' kernels
        both = None if wa is None or wb is None else _names(wa) + _names(wb)
        one = analyze_ptx(da, na, spec, kernel=both, **kw)
        sides = [_only(one, wa, na), _only(one, wb, nb)]
    else:
        sides = [analyze_ptx(d, n, spec, kernel=w, **kw) for d, n, w in inputs]
    if pairs:   # the names as the PTX spells them (--pair takes demangled names and prefixes)
        from ptxforge.ptx.names import match_kernel

        pairs = [tuple(match_kernel([k.name for k in side.kernels], want, side.file)
                       for side, want in zip(sides, pair)) for pair in pairs]
    res = compare_variants(*sides, pairs=pairs or None)
    emit(args, res.to_dict(args.top) if args.json else None, lambda: res.to_text(args.top))
    return EXIT_OK
