"""Binary data given as PTX is refused in one line, counting control and undecodable bytes."""

from __future__ import annotations

import pytest

from ptxforge.errors import ParseError
from ptxforge.ptx.parse import parse

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def test_binary_bytes_are_refused_with_their_count():
    data = b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4
    head = data.decode("utf-8", errors="replace")[:4096]
    odd = sum(1 for c in head if (c < " " and c not in "\t\n\r\f\v") or c == "\ufffd")
    with pytest.raises(ParseError, match=f"hold {odd} control or undecodable bytes"):
        parse(data, "blob.ptx")


def test_white_space_and_a_few_stray_bytes_are_left_to_the_parser():
    text = HEADER + "\t\v\f\r\n" * 200 + ".visible .entry k() { ret; }\n"
    assert [k.name for k in parse(text).kernels] == ["k"]
    stray = HEADER + "\x01" * 8 + "\n.visible .entry k() { ret; }\n"
    with pytest.raises(ParseError) as err:
        parse(stray, "stray.ptx")
    assert "not PTX text" not in str(err.value)
