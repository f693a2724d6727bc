"""The API's shape, as tests: no public function takes more than 8 parameters, and no attrs
class (a result, a request, an option set) accepts positional arguments.

Loose parameters travel together as request objects (:class:`ptxforge.LaunchSpec`,
:class:`ptxforge.CompileRequest`, :class:`ptxforge.reports.html.PageOptions`); a result built
from 23 positional arguments silently shifts every later field when one is inserted, so every
attrs class is ``kw_only``.  The lists below name what is still waiting, with why; they may
only shrink (a test fails when an entry is no longer needed).
"""

from __future__ import annotations

import importlib
import inspect

import attrs
import pytest

from package_modules import package_modules

MAX_PARAMETERS = 8

#: Modules whose attrs classes may still take positional arguments.  ``ptx.ir``: the IR
#: nodes (``ir.Instruction("ret")``, ``ir.Register("%r1", ...)``) are built positionally all
#: through the tests, docs and examples, as llvmlite's and xdsl's are; they are values, not
#: results.  The others are results of the wings the other parts of issue 23 own (liveness,
#: the opcode table, the layout), to be made keyword-only there.
POSITIONAL_MODULES = {
    "ptxforge.ptx.ir": "IR nodes, built positionally everywhere",
}


def _modules() -> list:
    out = []
    for name in sorted(package_modules()):
        if name.endswith("__main__"):
            continue
        try:
            out.append(importlib.import_module(name))
        except ImportError:  # an optional dependency (numba, triton) is missing
            continue
    return out


def _count(fn) -> int | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return sum(1 for p in sig.parameters.values() if p.name not in ("self", "cls"))


def _public_callables():
    """``(qualified name, function)`` for every public function and public method (plus a
    plain class's ``__init__``) defined in the package."""
    for mod in _modules():
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{mod.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for mname, member in vars(obj).items():
                    if mname.startswith("_") and not (mname == "__init__"
                                                      and not attrs.has(obj)):
                        continue
                    fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) \
                        else member
                    if inspect.isfunction(fn):
                        yield f"{mod.__name__}.{name}.{mname}", fn


def test_no_public_function_takes_more_than_eight_parameters():
    found = {qual: n for qual, fn in _public_callables()
             if (n := _count(fn)) is not None and n > MAX_PARAMETERS}
    assert not found, (f"public functions with more than {MAX_PARAMETERS} parameters "
                       f"(group them into a request object): {found}")
    # the walk sees the functions it must (a check that cannot fail is no check)
    names = {qual for qual, _ in _public_callables()}
    assert {"ptxforge.arch.occupancy.occupancy", "ptxforge.launch.timing.time_launch",
            "ptxforge.reports.html.svg.line_chart"} <= names


def test_every_attrs_class_is_keyword_only():
    positional, clean = {}, set()
    for mod in _modules():
        for name, obj in vars(mod).items():
            if not (inspect.isclass(obj) and attrs.has(obj) and obj.__module__ == mod.__name__):
                continue
            pos = [f.name for f in attrs.fields(obj) if f.init and not f.kw_only]
            if pos:
                positional[f"{mod.__name__}.{name}"] = pos
    offenders = {q: p for q, p in positional.items()
                 if q.rsplit(".", 1)[0] not in POSITIONAL_MODULES}
    assert not offenders, f"attrs classes that accept positional arguments: {offenders}"
    clean = {m for m in POSITIONAL_MODULES
             if not any(q.rsplit(".", 1)[0] == m for q in positional)}
    assert not clean, f"keyword-only now: remove from POSITIONAL_MODULES: {clean}"


def test_a_result_refuses_positional_arguments():
    from ptxforge.reports.analyze import KernelAnalysis, ModuleAnalysis
    from ptxforge.toolchain.compile import Compiled

    for cls in (KernelAnalysis, ModuleAnalysis, Compiled):
        with pytest.raises(TypeError):
            cls(*range(len(attrs.fields(cls))))


def test_the_request_objects_validate_once_at_construction():
    from ptxforge import CompileRequest, LaunchSpec
    from ptxforge.errors import PtxforgeError

    assert LaunchSpec(target="8.6", block=128).target == "sm_86"
    for bad in (dict(block=0), dict(block=True), dict(dynamic_shared=-1), dict(target=8.6)):
        with pytest.raises(PtxforgeError, match=r"LaunchSpec\.\w+: expected .*, got"):
            LaunchSpec(**bad)
    with pytest.raises(PtxforgeError, match=r"CompileRequest\.backend: expected .*got 'nvcc'"):
        CompileRequest(backend="nvcc")
    with pytest.raises(PtxforgeError, match="expected backend 'auto' or 'ptxas'"):
        CompileRequest(backend="nvjitlink", ptxas="/usr/bin/ptxas")
    with pytest.raises(PtxforgeError, match=r"CompileRequest\.options"):
        CompileRequest(options={"max_registers": 64})
