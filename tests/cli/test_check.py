"""``ptxforge check``: every budget kind, the exit codes, TOML globs, SARIF and JUnit output.

The kernels are real (NVRTC-compiled corpus sources, compiled again by the default backend
inside ``check``); each budget is set just at and just past the figure ``ptxforge analyze``
reports for the same file, so the tests hold whatever ptxas's exact numbers are.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

import ptxforge
from ptxforge.reports.check import BudgetError, parse_budget

from build_kit import DATA, first_loc, write_build
from cli_util import run

SCHEMA = json.loads((DATA / "sarif" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    return write_build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def figures(build):
    """``{kernel: analyze JSON}`` of every kernel in the build."""
    import contextlib
    import io

    from ptxforge.cli import main

    out = {}
    for ptx in sorted(build.glob("*.ptx")):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["analyze", str(ptx), "--json"]) == 0
        out.update({k["name"]: k for k in json.loads(buf.getvalue())["kernels"]})
    return out


def findings(capsys, *argv) -> tuple:
    """(exit status, {(kernel, rule): finding}) of ``check ... --json``."""
    code, out, err = run(capsys, "check", *argv, "--json")
    assert code in (0, 1), err
    data = json.loads(out)
    return code, {(f["kernel"], f["rule"]): f for f in data["findings"]}


# --- every budget kind, at and just past the real figure --------------------------------------

def test_max_registers_holds_at_the_count_and_fails_one_below(capsys, build, figures):
    regs = figures["live_window"]["ptxas"]["registers"]
    code, f = findings(capsys, build / "pressure.ptx", "--max-registers", regs)
    assert f[("live_window", "max-registers")]["status"] == "pass"
    code, f = findings(capsys, build / "pressure.ptx", "--max-registers", regs - 1)
    assert code == 1
    bad = f[("live_window", "max-registers")]
    assert (bad["status"], bad["limit"], bad["actual"]) == ("fail", regs - 1, regs)


def test_no_spills_fails_only_the_kernel_that_spills(capsys, build, figures):
    s = figures["spill_capped"]["ptxas"]
    assert s["spill_stores"] > 0  # __maxnreg__(32) on a kernel that needs more
    code, f = findings(capsys, build / "pressure.ptx", "--no-spills")
    assert code == 1
    assert f[("spill_capped", "no-spills")]["actual"] == s["spill_stores"] + s["spill_loads"]
    assert f[("live_window", "no-spills")]["status"] == "pass"
    code, f = findings(capsys, build / "templates.ptx", "--no-spills")
    assert code == 0 and {x["status"] for x in f.values()} == {"pass"}


def test_max_stack_holds_at_the_stack_and_fails_one_below(capsys, build, figures):
    stack = figures["local_array"]["ptxas"]["stack"]
    assert stack >= 256  # the 256-byte .local array lives on the stack
    assert findings(capsys, build / "local_array.ptx", "--max-stack", stack)[0] == 0
    code, f = findings(capsys, build / "local_array.ptx", "--max-stack", stack - 1)
    assert code == 1 and f[("local_array", "max-stack")]["actual"] == stack


@pytest.mark.parametrize("block", [128, 1024])
def test_min_occupancy_at_the_block_given(capsys, build, figures, block):
    regs = figures["live_window"]["ptxas"]["registers"]
    occ = ptxforge.occupancy(regs, block, "sm_80").occupancy
    code, f = findings(capsys, build / "pressure.ptx", "--min-occupancy", occ, "--block", block)
    got = f[("live_window", "min-occupancy")]
    assert got["status"] == "pass" and got["actual"] == pytest.approx(occ)
    code, f = findings(capsys, build / "pressure.ptx", "--min-occupancy", f"{100 * occ + 1}%",
                       "--block", block)
    assert code == 1 and f[("live_window", "min-occupancy")]["status"] == "fail"


def test_the_block_changes_the_occupancy_verdict(capsys, build, figures):
    regs = figures["live_window"]["ptxas"]["registers"]
    at = {b: ptxforge.occupancy(regs, b, "sm_80").occupancy for b in (64, 128, 256, 512, 1024)}
    lo, hi = min(at, key=at.get), max(at, key=at.get)
    assert at[lo] < at[hi]
    _, f = findings(capsys, build / "pressure.ptx", "--min-occupancy", at[hi], "--block", hi)
    assert f[("live_window", "min-occupancy")]["status"] == "pass"
    _, f = findings(capsys, build / "pressure.ptx", "--min-occupancy", at[hi], "--block", lo)
    assert f[("live_window", "min-occupancy")]["status"] == "fail"


# --- exit codes ------------------------------------------------------------------------------

def test_exit_codes(capsys, build, tmp_path):
    assert run(capsys, "check", build / "templates.ptx", "--max-registers", 255)[0] == 0
    assert run(capsys, "check", build / "pressure.ptx", "--no-spills")[0] == 1
    missing = run(capsys, "check", tmp_path / "nope.ptx", "--no-spills")
    assert missing[0] == 1 and "nope.ptx" in missing[2] and "Traceback" not in missing[2]
    bad = run(capsys, "check", DATA / "ptx" / "bad.ptx", "--no-spills")
    assert bad[0] == 1 and "bad.ptx" in bad[2]
    nothing = run(capsys, "check", build / "templates.ptx")
    assert nothing[0] == 2 and "no budget" in nothing[2]
    assert run(capsys, "check", build, "--min-occupancy", "1.5")[0] == 2
    assert run(capsys, "check", build, "--max-registers", "300")[0] == 2
    toml = tmp_path / "b.toml"
    toml.write_text("[defaults]\nmax-registers = 'many'\n")
    out = run(capsys, "check", build, "--budget", toml)
    assert out[0] == 2 and "max-registers" in out[2] and "b.toml" in out[2]
    toml.write_text("[defaults\n")
    assert run(capsys, "check", build, "--budget", toml)[0] == 2
    toml.write_text('[kernels."x*"]\nmax-regs = 3\n')
    out = run(capsys, "check", build, "--budget", toml)
    assert out[0] == 2 and "'max-regs'" in out[2]


def test_text_output_names_the_source_line_of_a_failure(capsys, build):
    code, out, _ = run(capsys, "check", build / "pressure.ptx", "--no-spills")
    src, line = first_loc((build / "pressure.ptx").read_text(), "spill_capped")
    assert code == 1
    assert f"{Path(src).name}:{line}: no-spills: spill_capped spills" in out
    assert "1 of 2 checks failed on 2 kernels" in out


# --- TOML budgets: globs on mangled and demangled names ---------------------------------------

def test_toml_globs_on_demangled_and_mangled_names(capsys, build, figures, tmp_path):
    names = [n for n in figures if n.startswith("_Z4map2")]
    assert len(names) == 3
    dbl = next(n for n in names if "map2Id5" in n)
    regs = figures[dbl]["ptxas"]["registers"]
    toml = tmp_path / "ptxforge.toml"
    toml.write_text(f"""
[defaults]
max-registers = 255

[kernels."map2<double*"]      # demangled
max-registers = {regs - 1}

[kernels."_Z4map2Ii*"]         # mangled: the int instantiation
no-spills = true

[kernels."no_such_kernel*"]
max-stack = 0
""")
    code, out, _ = run(capsys, "check", build / "templates.ptx", "--budget", toml)
    assert code == 1
    assert "map2<double, Saxpy<double> >" in out and "note: budget pattern 'no_such_kernel*'" in out
    code, f = findings(capsys, build / "templates.ptx", "--budget", toml)
    failed = {k for k, x in f.items() if x["status"] != "pass"}
    assert failed == {(dbl, "max-registers")}
    intk = next(n for n in names if "map2Ii5" in n)
    assert (intk, "no-spills") in f and (dbl, "no-spills") not in f
    assert sum(1 for k in f if k[1] == "max-registers") == 4  # defaults reach every kernel


def test_budget_precedence_flags_then_defaults_then_kernel_tables():
    b = parse_budget('[defaults]\nmax-registers = 100\n[kernels."a*"]\nmax-registers = 50\n'
                     '[kernels."ab*"]\nmax-registers = 40\nno-spills = false\n')
    from ptxforge.reports.check import Budget

    flags = Budget(max_registers=200, no_spills=True, max_stack=8)
    assert b.for_kernel(["zz"], flags) == Budget(max_registers=100, no_spills=True, max_stack=8)
    assert b.for_kernel(["abc"], flags) == Budget(max_registers=40, no_spills=False, max_stack=8)
    assert b.for_kernel(["a1"], flags).max_registers == 50
    with pytest.raises(BudgetError, match="min-occupancy"):
        parse_budget('[defaults]\nmin-occupancy = 0\n')
    with pytest.raises(BudgetError, match="block"):
        parse_budget('[kernels."k"]\nblock = 2048\n')
    assert parse_budget('[tool.ptxforge.defaults]\nmax-stack = 0\n').defaults.max_stack == 0


# --- SARIF and JUnit -------------------------------------------------------------------------

def test_sarif_is_valid_2_1_0_and_located_at_the_kernel_source_line(capsys, build, tmp_path):
    out = tmp_path / "out.sarif"
    code, _, err = run(capsys, "check", build, "--no-spills", "--max-stack", 0,
                       "--max-registers", 40, "--sarif", out, "--source-root", "/")
    assert code == 1, err
    log = json.loads(out.read_text())
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    run_ = log["runs"][0]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    assert rules == ["max-registers", "no-spills", "max-stack", "min-occupancy"]
    results = run_["results"]
    by = {(r["properties"]["kernel"], r["ruleId"]): r for r in results}
    assert {("spill_capped", "no-spills"), ("spill_capped", "max-stack"),
            ("local_array", "max-stack"), ("live_window", "max-registers")} <= set(by)
    for (kernel, rule), r in by.items():
        assert rules[r["ruleIndex"]] == rule and r["level"] == "error"
    # a kernel with .loc: its CUDA source line; one without: its .entry line in the PTX
    src, line = first_loc((build / "pressure.ptx").read_text(), "spill_capped")
    phys = by[("spill_capped", "no-spills")]["locations"][0]["physicalLocation"]
    assert phys["region"]["startLine"] == line
    assert phys["artifactLocation"]["uri"].endswith(Path(src).name)
    assert by[("spill_capped", "no-spills")]["relatedLocations"]
    phys = by[("local_array", "max-stack")]["locations"][0]["physicalLocation"]
    entry = next(i for i, t in enumerate((build / "local_array.ptx").read_text().splitlines(), 1)
                 if ".entry local_array" in t)
    assert phys["region"]["startLine"] == entry
    assert phys["artifactLocation"]["uri"].endswith("local_array.ptx")


def test_sarif_of_a_passing_check_has_no_results_and_is_valid(capsys, build, tmp_path):
    out = tmp_path / "ok.sarif"
    assert run(capsys, "check", build / "templates.ptx", "--no-spills", "--sarif", out)[0] == 0
    log = json.loads(out.read_text())
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["invocations"][0]["exitCode"] == 0


def test_junit_is_well_formed_with_one_case_per_kernel_and_budget(capsys, build, tmp_path):
    xml = tmp_path / "out.xml"
    code, out, _ = run(capsys, "check", build, "--no-spills", "--max-stack", 0, "--junit", xml)
    assert code == 1
    root = ET.parse(xml).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert {Path(s.get("name")).name for s in suites} == {"pressure.ptx", "templates.ptx",
                                                          "local_array.ptx"}
    cases = root.findall("testsuite/testcase")
    failures = root.findall("testsuite/testcase/failure")
    assert int(root.get("tests")) == len(cases) == 2 * 7  # 7 kernels, 2 budgets each
    assert int(root.get("failures")) == len(failures) == sum(
        int(s.get("failures")) for s in suites)
    for s in suites:
        assert int(s.get("tests")) == len(s.findall("testcase"))
    failed = sorted(c.get("name") for c in cases if c.find("failure") is not None)
    assert failed == ["local_array: max-stack", "spill_capped: max-stack",
                      "spill_capped: no-spills"]
    assert all(f.get("type") in ("no-spills", "max-stack") and f.get("message")
               for f in failures)


def test_a_cubin_cannot_say_spills_so_the_check_fails_as_unknown(capsys, build, tmp_path):
    cubin = tmp_path / "templates.cubin"
    cubin.write_bytes(ptxforge.compile_ptx((build / "templates.ptx").read_text(), "sm_80").cubin)
    code, f = findings(capsys, cubin, "--no-spills", "--max-registers", 255)
    assert code == 1
    assert {x["status"] for k, x in f.items() if k[1] == "no-spills"} == {"unknown"}
    assert {x["status"] for k, x in f.items() if k[1] == "max-registers"} == {"pass"}
    sarif, xml = tmp_path / "c.sarif", tmp_path / "c.xml"
    run(capsys, "check", cubin, "--no-spills", "--sarif", sarif, "--junit", xml)
    log = json.loads(sarif.read_text())
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    assert {r["level"] for r in log["runs"][0]["results"]} == {"warning"}
    root = ET.parse(xml).getroot()
    assert int(root.get("errors")) == len(root.findall("testsuite/testcase/error")) == 4


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_that_cannot_be_read_fails_the_check_but_the_others_are_checked(
        capsys, build, tmp_path, jobs):
    # a CI gate over a build folder: one broken file is reported (text, JSON, SARIF, JUnit)
    # and fails the check; the kernels of the other files are still checked
    import shutil

    folder = tmp_path / "mixed"
    shutil.copytree(build, folder)
    (folder / "broken.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                       ".visible .entry k()\n{\n\tbogus.op %r1;\n\tret;\n}\n")
    sarif, xml = tmp_path / "out.sarif", tmp_path / "out.xml"
    code, out, err = run(capsys, "check", folder, "--max-registers", 255, "--jobs", jobs,
                         "--sarif", sarif, "--junit", xml)
    assert code == 1 and "Traceback" not in err
    flat = " ".join(out.split())   # lines wrap where the temporary path is long
    assert "1 file could not be checked:" in flat
    assert "broken.ptx:6:2: unknown opcode 'bogus'" in flat
    assert flat.endswith("all 7 checks hold on 7 kernels; 1 file not checked")
    log = json.loads(sarif.read_text())
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "input-not-checked" and result["level"] == "error"
    phys = result["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"].endswith("broken.ptx")
    assert phys["region"]["startLine"] == 6
    assert log["runs"][0]["invocations"][0]["exitCode"] == 1
    root = ET.parse(xml).getroot()
    assert int(root.get("errors")) == 1 and int(root.get("tests")) == 7 + 1
    (case,) = [c for c in root.iter("testcase") if c.find("error") is not None]
    assert case.get("name") == "input" and case.get("classname").endswith("broken.ptx")
    code, out, _ = run(capsys, "check", folder, "--max-registers", 255, "--jobs", jobs, "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and len(data["kernels"]) == 7
    (bad,) = data["files_not_checked"]
    assert bad["file"].endswith("broken.ptx") and "unknown opcode 'bogus'" in bad["error"]
