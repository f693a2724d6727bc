"""Compiler facts (versions, accepted targets) remembered on disk per executable file."""

from __future__ import annotations

import json
import os

import pytest

from ptxforge.toolchain import tool_facts


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(tool_facts.ENV, raising=False)
    tool_facts.forget()
    yield tmp_path / "cache" / "ptxforge" / "tool_facts.json"
    tool_facts.forget()


def _exe(path, text="#!/bin/sh\necho release 12.4\n"):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_a_fact_is_computed_once_and_kept_on_disk(cache, tmp_path):
    exe, calls = _exe(tmp_path / "ptxas"), []
    ask = lambda: calls.append(1) or [12, 4]   # noqa: E731
    assert tool_facts.remembered(exe, "ptxas --version", ask) == [12, 4]
    tool_facts.forget()                          # a new process: read back from the file
    assert tool_facts.remembered(exe, "ptxas --version", ask) == [12, 4]
    assert calls == [1]
    facts = json.loads(cache.read_text())["facts"]
    assert [k.split("|")[-1] for k in facts] == ["ptxas --version"]


def test_a_replaced_executable_is_asked_again(cache, tmp_path):
    exe = _exe(tmp_path / "ptxas")
    assert tool_facts.remembered(exe, "v", lambda: 1) == 1
    _exe(tmp_path / "ptxas", "#!/bin/sh\necho release 13.0 and more\n")   # new size
    os.utime(exe, ns=(1, 1))
    assert tool_facts.remembered(exe, "v", lambda: 2) == 2


def test_off_keeps_nothing_on_disk_and_gone_files_are_forgotten(cache, tmp_path, monkeypatch):
    exe = _exe(tmp_path / "ptxas")
    monkeypatch.setenv(tool_facts.ENV, "off")
    assert tool_facts.remembered(exe, "v", lambda: 3) == 3
    assert not cache.exists()
    monkeypatch.delenv(tool_facts.ENV)
    tool_facts.forget()
    gone = _exe(tmp_path / "old")
    tool_facts.remembered(gone, "v", lambda: 4)
    os.unlink(gone)
    tool_facts.remembered(exe, "v", lambda: 5)
    assert all(k.startswith(os.path.realpath(exe)) for k in json.loads(cache.read_text())["facts"])


def test_a_broken_cache_file_is_ignored(cache, tmp_path):
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    exe = _exe(tmp_path / "ptxas")
    assert tool_facts.remembered(exe, "v", lambda: 6) == 6
    assert json.loads(cache.read_text())["version"] == 1


def test_ptxas_version_reads_through_the_cache(cache, tmp_path):
    from ptxforge.toolchain.backends import ptxas_version

    exe = _exe(tmp_path / "fake-ptxas", "#!/bin/sh\necho 'Cuda compilation tools, release 12.4'\n")
    assert ptxas_version(exe) == (12, 4)
    assert any(k.endswith("ptxas --version") for k in json.loads(cache.read_text())["facts"])
