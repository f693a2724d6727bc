"""The Python blocks in README.md and docs/getting-started.md run as written."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/getting-started.md"]


def _blocks(page: str) -> list[str]:
    text = (ROOT / page).read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES)
def test_page_python_blocks_run_in_order(page, capsys):
    blocks = _blocks(page)
    assert blocks, f"{page} has no python blocks"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, f"{page}:python-block", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.strip(), "the blocks print their results"


def test_readme_quick_start_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in quick.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f"{command!r} is not run by .ci/run"


def test_getting_started_type_error_names_this_line(capsys):
    block = next(b for b in _blocks("docs/getting-started.md") if "PtxTypeError" in b)
    setup = _blocks("docs/getting-started.md")[0]
    namespace: dict = {}
    exec(compile(setup, "setup", "exec"), namespace)
    exec(compile(block, "docs/getting-started.md:typeblock", "exec"), namespace)
    out = capsys.readouterr().out
    assert "add" in out and ".f32" in out and ".u32" in out
    assert "docs/getting-started.md:typeblock:4" in out
