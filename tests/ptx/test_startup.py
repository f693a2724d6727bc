"""Startup: ``import ptxforge`` and ``ptxforge analyze --no-compile`` import only what they use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("networkx", "cuda.bindings", "cuda.core", "ptxforge.toolchain", "ptxforge.dsl",
         "ptxforge.launch", "ptxforge.ptx.itanium", "concurrent.futures", "subprocess")
TINY = """.version 8.0
.target sm_80
.address_size 64
.visible .entry saxpy(.param .u64 x, .param .f32 a)
{
\t.reg .f32 %f<3>;
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [x];
\tld.param.f32 %f1, [a];
\tld.global.f32 %f2, [%rd1];
\tmul.f32 %f2, %f2, %f1;
\tst.global.f32 [%rd1], %f2;
\tret;
}
"""


def loaded(code: str) -> list:
    """The heavy modules loaded after running ``code`` in a fresh interpreter."""
    code += ("\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules "
             f"if m.startswith({HEAVY!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_ptxforge_is_light():
    assert loaded("import ptxforge") == []


def test_the_public_names_load_on_first_use():
    mods = loaded("import ptxforge\nassert callable(ptxforge.analyze_pressure)\n"
                  "assert ptxforge.target('90a').name == 'sm_90a'")
    assert mods == []
    assert "ptxforge.dsl" in loaded("import ptxforge\nptxforge.KernelBuilder")
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        import ptxforge

        ptxforge.nonesuch  # noqa: B018


def test_analyze_no_compile_imports_no_compiler_graph_or_demangler(tmp_path):
    path = tmp_path / "tiny.ptx"
    path.write_text(TINY)
    code = ("import io, contextlib\nfrom ptxforge.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['analyze', {str(path)!r}, '--no-compile']) == 0")
    assert loaded(code) == []
