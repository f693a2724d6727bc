"""``ptxforge report`` over a folder: a page per file (the same page as for the file alone),
an index linking them, every file written announced, ``--jobs`` at a time."""

from __future__ import annotations

from build_kit import write_build
from cli_util import run


def test_a_folder_gives_a_page_per_file_and_an_index(tmp_path, capsys):
    build = write_build(tmp_path / "build")
    out = tmp_path / "pages"
    code, _, err = run(capsys, "report", build, "-o", out, "--no-compile", "--jobs", 2)
    assert code == 0, err
    names = sorted(p.stem for p in build.glob("*.ptx"))
    assert sorted(p.stem for p in out.glob("*.html") if p.name != "index.html") == names
    index = (out / "index.html").read_text()
    assert all(f'href="{n}.html"' in index for n in names)
    assert all(f"wrote {out / (n + '.html')}" in err for n in names)
    assert f"wrote {out / 'index.html'} ({len(names)} of {len(names)} pages)" in err
    code, _, _ = run(capsys, "report", build / "pressure.ptx", "-o", tmp_path / "one.html",
                     "--no-compile")
    assert code == 0
    assert (tmp_path / "one.html").read_text() == (out / "pressure.html").read_text()


def test_a_bad_file_is_named_in_the_index_and_the_rest_written(tmp_path, capsys):
    build = write_build(tmp_path / "build", sources=("pressure",), local_array=False)
    (build / "broken.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                      ".visible .entry k() { bogus.op; }\n")
    out = tmp_path / "pages"
    code, _, err = run(capsys, "report", build, "-o", out, "--no-compile", "--jobs", 1)
    assert code == 1 and "broken.ptx" in err and "bogus" in err
    assert (out / "pressure.html").is_file() and not (out / "broken.html").exists()
    assert "bogus" in (out / "index.html").read_text()


def test_several_inputs_need_a_folder_not_stdout(tmp_path, capsys):
    build = write_build(tmp_path / "build", sources=("pressure",), local_array=False)
    code, _, err = run(capsys, "report", build, "-o", "-", "--no-compile")
    assert code == 2 and "give -o FOLDER" in err


def _wait_for(marker: str) -> str:
    """A worker's answer: 'streamed' once ``marker`` exists (the caller makes it when it has
    the first result), 'held back' after 30 s without it."""
    import os
    import time

    if marker.endswith("first"):
        return "first"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.exists(marker):
            return "streamed"
        time.sleep(0.05)
    return "held back"


def test_results_come_as_they_are_ready_in_order(tmp_path):
    """A folder report writes each page when it is ready (a folder of hundreds of files used
    to write nothing until the last was analysed): the first result reaches the caller while
    a later item still waits for it."""
    from ptxforge._parallel import ordered_imap

    marker = tmp_path / "have-one"
    items = [str(tmp_path / "first"), str(marker), str(marker)]
    out = []
    for value in ordered_imap(_wait_for, items, jobs=2):
        out.append(value)
        marker.touch()
    assert out == ["first", "streamed", "streamed"]
    assert list(ordered_imap(_wait_for, [str(tmp_path / "first")], jobs=1)) == ["first"]
