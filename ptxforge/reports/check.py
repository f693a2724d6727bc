"""Register budgets for CI: which kernels keep their registers, spills, stack and occupancy.

A :class:`Budget` holds up to four limits (None: not checked): ``max_registers`` (ptxas's
count), ``no_spills`` (no spill stores or loads), ``max_stack`` (bytes of stack per thread)
and ``min_occupancy`` (0..1, at ``block`` threads per block).  Budgets come from the
command line and from a TOML file (:func:`load_budget`)::

    # ptxforge.toml (or the [tool.ptxforge] table of pyproject.toml)
    [defaults]                 # every kernel
    no-spills = true
    max-registers = 128

    [kernels."softmax*"]       # a glob on the mangled or the demangled name
    max-registers = 64
    min-occupancy = "50%"      # or 0.5
    block = 128                # threads per block for min-occupancy

Precedence, lowest first: the command line's flags, ``[defaults]`` (a key given there
replaces the flag's value), then every ``[kernels."GLOB"]`` table whose glob matches, in file
order.  :func:`check` evaluates every limit of every kernel into a :class:`Finding`
(``pass``, ``fail``, or ``unknown`` when the input cannot say, e.g. spill bytes of a cubin);
:class:`CheckReport` has the exit status (0: all hold, 1: a limit fails or is unknown) and the
text; :mod:`ptxforge.reports.sarif` and :mod:`ptxforge.reports.junit` write it for CI.

Example::

    >>> b = parse_budget('[defaults]\\nmax-registers = 64\\n'
    ...                  '[kernels."gemm_*"]\\nno-spills = true\\n')
    >>> b.for_kernel(["gemm_tn"])
    Budget(max_registers=64, no_spills=True, max_stack=None, min_occupancy=None, block=None)
    >>> parse_occupancy("50%"), parse_occupancy(0.25)
    (0.5, 0.25)
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Optional

import attrs

from ptxforge._text import short_loc, short_path, table, wrap
from ptxforge.errors import PtxforgeError
from ptxforge.ptx.demangle import display_name, full_name

from .names import short_labels

if TYPE_CHECKING:
    from .figures import KernelFigures

__all__ = [
    "RULES",
    "Budget",
    "BudgetError",
    "BudgetFile",
    "CheckReport",
    "Finding",
    "check",
    "load_budget",
    "parse_budget",
    "parse_occupancy",
]

#: The budget kinds: rule id -> (TOML key, one-line description).
RULES = {
    "max-registers": ("max-registers", "ptxas's register count must not exceed the budget"),
    "no-spills": ("no-spills", "ptxas must not spill registers to local memory"),
    "max-stack": ("max-stack", "the per-thread stack (bytes) must not exceed the budget"),
    "min-occupancy": ("min-occupancy", "occupancy at the block size must reach the budget"),
}
_KEYS = {"max-registers", "no-spills", "max-stack", "min-occupancy", "block"}


class BudgetError(PtxforgeError):
    """A budget file or value that cannot be used (bad TOML, unknown key, value out of range)."""


def parse_occupancy(value, where: str = "min-occupancy") -> float:
    """An occupancy budget as a fraction: ``0.5``, ``"0.5"`` or ``"50%"`` -> 0.5 (BudgetError
    outside 0 < x <= 1)."""
    text = str(value).strip()
    try:
        if isinstance(value, str) and text.endswith("%"):
            frac = float(text[:-1]) / 100
        elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
            frac = float(text)
        else:
            raise ValueError
    except ValueError:
        raise BudgetError(f"{where}: expected a fraction such as 0.5 or a percentage such as "
                          f"'50%', got {value!r}") from None
    if not 0 < frac <= 1:
        raise BudgetError(f"{where}: expected an occupancy in (0, 1] (or 1%..100%), got "
                          f"{value!r}")
    return frac


def _int(value, lo: int, hi: Optional[int], where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < lo or (
            hi is not None and value > hi):
        bound = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise BudgetError(f"{where}: expected an integer {bound}, got {value!r}")
    return value


@attrs.frozen(slots=True, kw_only=True)
class Budget:
    """The limits for one kernel; None (``no_spills``: None or False) leaves one unchecked."""

    max_registers: Optional[int] = None
    no_spills: Optional[bool] = None
    max_stack: Optional[int] = None
    min_occupancy: Optional[float] = None
    block: Optional[int] = None

    @classmethod
    def from_mapping(cls, table_: dict, where: str) -> Budget:
        """A budget from a TOML table (keys ``max-registers``, ``no-spills``, ``max-stack``,
        ``min-occupancy``, ``block``); BudgetError naming ``where`` for anything else."""
        if not isinstance(table_, dict):
            raise BudgetError(f"{where}: expected a table of limits, got {table_!r}")
        unknown = sorted(set(table_) - _KEYS)
        if unknown:
            raise BudgetError(f"{where}: unknown key {unknown[0]!r}; expected one of "
                              f"{', '.join(sorted(_KEYS))}")
        max_registers = no_spills = max_stack = min_occupancy = block = None
        if "max-registers" in table_:
            max_registers = _int(table_["max-registers"], 1, 255, f"{where} max-registers")
        if "no-spills" in table_:
            if not isinstance(table_["no-spills"], bool):
                raise BudgetError(f"{where} no-spills: expected true or false, got "
                                  f"{table_['no-spills']!r}")
            no_spills = table_["no-spills"]
        if "max-stack" in table_:
            max_stack = _int(table_["max-stack"], 0, None, f"{where} max-stack")
        if "min-occupancy" in table_:
            min_occupancy = parse_occupancy(table_["min-occupancy"], f"{where} min-occupancy")
        if "block" in table_:
            block = _int(table_["block"], 1, 1024, f"{where} block")
        return cls(max_registers=max_registers, no_spills=no_spills, max_stack=max_stack,
                   min_occupancy=min_occupancy, block=block)

    def over(self, base: Budget) -> Budget:
        """This budget's set limits over ``base``'s."""
        return Budget(**{f.name: (mine if mine is not None else getattr(base, f.name))
                         for f in attrs.fields(Budget)
                         for mine in (getattr(self, f.name),)})

    @property
    def empty(self) -> bool:
        """Whether no limit is set."""
        return (self.max_registers is None and not self.no_spills and self.max_stack is None
                and self.min_occupancy is None)


@attrs.frozen(slots=True, kw_only=True)
class BudgetFile:
    """A parsed budget file: ``defaults`` and ``(glob, Budget)`` pairs in file order."""

    path: str
    defaults: Budget = Budget()
    kernels: tuple = ()

    def for_kernel(self, names: Iterable[str], base: Budget = Budget()) -> Budget:
        """The budget of a kernel known by ``names`` (mangled, demangled, short), over
        ``base`` (the command line's flags)."""
        names = [n for n in names if n]
        out = self.defaults.over(base)
        for pattern, budget in self.kernels:
            if any(fnmatch.fnmatchcase(n, pattern) for n in names):
                out = budget.over(out)
        return out

    def unmatched(self, names: Iterable[Iterable[str]]) -> tuple:
        """The globs that match none of the kernels (each given by its names)."""
        pools = [list(n) for n in names]
        return tuple(p for p, _ in self.kernels
                     if not any(fnmatch.fnmatchcase(n, p) for pool in pools for n in pool if n))


def _toml_loads(text: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def parse_budget(text: str, path: str = "<budget>") -> BudgetFile:
    """Parse budget TOML (see the module docstring); BudgetError with the file and key."""
    try:
        data = _toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise BudgetError(f"{path}: not valid TOML: {exc}") from None
    if "tool" in data and isinstance(data["tool"], dict) and "ptxforge" in data["tool"]:
        data = data["tool"]["ptxforge"]
    unknown = sorted(set(data) - {"defaults", "kernels"})
    if unknown:
        raise BudgetError(f"{path}: unknown table or key {unknown[0]!r}; expected [defaults] "
                          "and [kernels.\"GLOB\"] tables")
    defaults = Budget.from_mapping(data.get("defaults", {}), f"{path} [defaults]")
    kernels = data.get("kernels", {})
    if not isinstance(kernels, dict):
        raise BudgetError(f"{path}: 'kernels' must be tables such as [kernels.\"gemm_*\"], "
                          f"got {kernels!r}")
    pairs = tuple((pattern, Budget.from_mapping(t, f"{path} [kernels.{pattern!r}]"))
                  for pattern, t in kernels.items())
    return BudgetFile(path=path, defaults=defaults, kernels=pairs)


def load_budget(path: str) -> BudgetFile:
    """Read and parse a budget file (BudgetError when it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise BudgetError(f"cannot read budget file {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BudgetError(f"budget file {path!r} is not UTF-8 text (byte {exc.start}); expected "
                          "a TOML file such as ptxforge.toml with a [defaults] table") from None
    return parse_budget(text, path)


@attrs.frozen(slots=True, kw_only=True)
class Finding:
    """One limit checked on one kernel: ``status`` ``"pass"``, ``"fail"`` or ``"unknown"``;
    ``limit`` and ``actual`` in the rule's unit (registers, bytes, or an occupancy 0..1)."""

    rule: str
    kernel: KernelFigures
    status: str
    limit: Optional[float]
    actual: Optional[float]
    message: str

    @property
    def ok(self) -> bool:
        """Whether the limit holds."""
        return self.status == "pass"

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        k = self.kernel
        return {"rule": self.rule, "file": k.file, "kernel": k.name, "demangled": k.demangled,
                "status": self.status, "limit": self.limit, "actual": self.actual,
                "message": self.message}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _evaluate(k, b: Budget) -> list:
    out = []
    who = display_name(k.name)
    if b.max_registers is not None:
        if k.registers is None:
            out.append(Finding(rule="max-registers", kernel=k, status="unknown",
                               limit=b.max_registers, actual=None,
                               message=f"{who}: ptxas's register count is unknown (not compiled)"))
        else:
            ok = k.registers <= b.max_registers
            out.append(Finding(rule="max-registers", kernel=k, status="pass" if ok else "fail",
                               limit=b.max_registers, actual=k.registers,
                               message=f"{who} uses {k.registers} registers "
                                       f"({'within' if ok else 'over'} the budget of "
                                       f"{b.max_registers})"))
    if b.no_spills:
        if k.spills is None:
            why = ("a cubin records no spill bytes (they are only in ptxas's log): check the "
                   "PTX" if k.origin == "cubin" else "not compiled")
            out.append(Finding(rule="no-spills", kernel=k, status="unknown", limit=0, actual=None,
                               message=f"{who}: spills unknown: {why}"))
        else:
            ok = k.spills == 0
            text = (f"{who} spills {k.spill_stores} bytes (stores) and {k.spill_loads} bytes "
                    f"(loads) with {k.registers} registers" if not ok else
                    f"{who} does not spill")
            if k.origin == "triton" and k.stack is not None:
                text += (f" (Triton's n_spills, its local memory / 4, would say "
                         f"{k.stack // 4})")
            out.append(Finding(rule="no-spills", kernel=k, status="pass" if ok else "fail", limit=0,
                               actual=k.spills, message=text))
    if b.max_stack is not None:
        if k.stack is None or not k.stack_known:
            why = ("not compiled" if k.stack is None else
                   f"ptxas cannot bound it (recursion or indirect calls; at least {k.stack} "
                   "bytes)")
            out.append(Finding(rule="max-stack", kernel=k, status="unknown", limit=b.max_stack,
                               actual=k.stack, message=f"{who}: stack unknown: {why}"))
        else:
            ok = k.stack <= b.max_stack
            out.append(Finding(rule="max-stack", kernel=k, status="pass" if ok else "fail",
                               limit=b.max_stack, actual=k.stack,
                               message=f"{who} needs {k.stack} bytes of stack per thread "
                                       f"({'within' if ok else 'over'} the budget of "
                                       f"{b.max_stack})"))
    if b.min_occupancy is not None:
        block = b.block or k.block_size
        occ = k.occupancy_at(block)
        where = (f"{block} threads/block" + ("" if b.block else f" ({k.block_source})"))
        if occ is None:
            out.append(Finding(rule="min-occupancy", kernel=k, status="unknown",
                               limit=b.min_occupancy, actual=None,
                               message=f"{who}: occupancy unknown at {where}: "
                                       f"{k.occupancy_note or 'no occupancy table'}"))
        else:
            ok = occ.occupancy + 1e-9 >= b.min_occupancy
            text = (f"{who} reaches {_pct(occ.occupancy)} occupancy ({occ.active_blocks} "
                    f"blocks/SM) at {where}")
            if not ok:
                text += (f", below the budget of {_pct(b.min_occupancy)}; limited by "
                         f"{', '.join(occ.limiting) or 'nothing'}")
                if occ.reason:
                    text += f" ({occ.reason})"
            out.append(Finding(rule="min-occupancy", kernel=k, status="pass" if ok else "fail",
                               limit=b.min_occupancy, actual=round(occ.occupancy, 6), message=text))
    return out


@attrs.frozen(slots=True, kw_only=True)
class CheckReport:
    """Every finding of a check, the kernels checked, and the globs that matched nothing."""

    findings: tuple
    kernels: tuple
    unmatched: tuple = ()
    budget_file: Optional[str] = None
    no_kernel: tuple = ()        # files that hold no kernel (PTX of globals only)
    not_checked: tuple = ()      # (file, error message): read, parsed or compiled in vain

    @property
    def failures(self) -> tuple:
        """The findings whose limit fails or cannot be checked."""
        return tuple(f for f in self.findings if not f.ok)

    @property
    def exit_status(self) -> int:
        """0 when every limit holds and every file was checked, 1 otherwise."""
        return 1 if self.failures or self.not_checked else 0

    def to_dict(self) -> dict:
        """JSON-ready dict (``schema`` ``ptxforge.check/1``)."""
        return {"schema": "ptxforge.check/1", "ok": not self.exit_status,
                "budget_file": self.budget_file,
                "kernels": [k.to_dict() for k in self.kernels],
                "findings": [f.to_dict() for f in self.findings],
                "unmatched_patterns": list(self.unmatched),
                "files_without_kernels": list(self.no_kernel),
                "files_not_checked": [{"file": p, "error": e} for p, e in self.not_checked]}

    def to_text(self) -> str:
        """The readable report: a table of kernels, then each failure, then the verdict."""
        by_kernel: dict[int, list[Finding]] = {}
        for f in self.findings:
            by_kernel.setdefault(id(f.kernel), []).append(f)
        rows, failed = [], []
        for k in self.kernels:
            fs = by_kernel.get(id(k), [])
            bad = [f.rule for f in fs if not f.ok]
            verdict = "FAIL " + ",".join(bad) if bad else ("ok" if fs else "no budget")
            failed.append(len(verdict) > 18)   # a long verdict goes on its own line
            verdict = "FAIL" if failed[-1] else verdict
            spills = "?" if k.spills is None else f"{k.spill_stores}/{k.spill_loads}"
            rows.append(("-" if k.registers is None else k.registers,
                         spills, "?" if k.stack is None else k.stack,
                         "n/a" if k.occupancy is None else _pct(k.occupancy), verdict))
        header = ("kernel", "registers", "spill st/ld", "stack", "occupancy", "verdict")
        right = {1, 2, 3, 4}
        rest = max(len(x) for x in table(header, [("", *r) for r in rows], right))
        labels = short_labels([display_name(k.name) for k in self.kernels],
                              max(24, 100 - rest + len(header[0])))
        lines = []
        for row, k, long in zip(table(header, [(n, *r) for n, r in zip(labels, rows)], right),
                                [None, *self.kernels], [False, *failed]):
            lines.append(row)
            if long:
                bad = [f.rule for f in by_kernel[id(k)] if not f.ok]
                lines += wrap("failed: " + ", ".join(bad), indent="    ", subsequent="      ")
        fails = self.failures
        if fails:
            lines.append("")
            for f in fails:
                loc = _where(f.kernel)
                lines += wrap(f"{short_loc(loc, 60)}: {f.rule}: {f.message}" if loc
                              else f"{f.rule}: {f.message}")
        for p in self.unmatched:
            lines.append(f"note: budget pattern {p!r} matches no kernel")
        if self.no_kernel:
            lines += ["", *wrap(f"no kernel in {len(self.no_kernel)} "
                                f"file{'s' if len(self.no_kernel) != 1 else ''} (globals only, "
                                "nothing to check): "
                                + ", ".join(short_path(p, 60) for p in self.no_kernel))]
        if self.not_checked:
            m = len(self.not_checked)
            lines += ["", f"{m} file{'s' if m != 1 else ''} could not be checked:"]
            for p, e in self.not_checked:
                first = e.splitlines()[0] if e else "error"
                lines += wrap(first if p in first else f"{short_path(p, 60)}: {first}",
                              indent="  ", subsequent="    ")
        n = len(self.kernels)
        lines += ["", f"{len(fails)} of {len(self.findings)} checks failed on {n} kernel"
                  f"{'s' if n != 1 else ''}" if fails else
                  _holds(len(self.findings)) + f" on {n} kernel{'s' if n != 1 else ''}"]
        if self.not_checked:
            lines[-1] += (f"; {len(self.not_checked)} file"
                          f"{'s' if len(self.not_checked) != 1 else ''} not checked")
        return "\n".join(lines) + "\n"


def _holds(n: int) -> str:
    """``the 1 check holds`` / ``all 3 checks hold``."""
    return "the 1 check holds" if n == 1 else f"all {n} checks hold"


def _where(k) -> Optional[str]:
    if k.source is not None:
        return f"{k.source[0]}:{k.source[1]}"
    if k.entry_line is not None:
        return f"{k.file}:{k.entry_line}"
    return k.file


def check(kernels: Sequence, base: Budget = Budget(),
          budget_file: Optional[BudgetFile] = None, no_kernel: Sequence = (),
          not_checked: Sequence = ()) -> CheckReport:
    """Check every kernel's figures (:class:`~ptxforge.reports.figures.KernelFigures`)
    against ``base`` (the command line's limits) refined by ``budget_file``; ``no_kernel``
    names the files read that hold no kernel (the report lists them), ``not_checked`` the
    ``(file, error)`` of those that could not be read, parsed or compiled (they fail it)."""
    findings = []
    names = []
    for k in kernels:
        b = base
        if budget_file is not None:   # the names its globs match (demangled: only for them)
            pool = (k.name, full_name(k.name), display_name(k.name))
            names.append(pool)
            b = budget_file.for_kernel(pool, base)
        findings += _evaluate(k, b)
    unmatched = budget_file.unmatched(names) if budget_file is not None else ()
    return CheckReport(findings=tuple(findings), kernels=tuple(kernels), unmatched=unmatched,
                       budget_file=budget_file.path if budget_file is not None else None,
                       no_kernel=tuple(no_kernel), not_checked=tuple(not_checked))
