"""Running the ``ptxforge`` command in-process for the CLI tests."""

from __future__ import annotations

import json

from ptxforge.cli import main


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``main(argv)``."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    """The parsed JSON of ``main([*argv, "--json"])``, which must exit 0."""
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def flat(text: str) -> str:
    """``text`` with every run of whitespace (line breaks of wrapped prose included) as one
    space: ``flat(sentence) in flat(out)`` finds a sentence however the report wrapped it."""
    return " ".join(text.split())


def header(text: str) -> str:
    """The report's header (its lines up to the first blank one), :func:`flat`."""
    return flat(text.split("\n\n", 1)[0])
