"""bench/served_profile.py: shares of py-spy's collapsed samples, inclusive and own, lines
ignored."""

from __future__ import annotations

from bench.served_profile import own_shares, shares


def test_each_function_counts_once_per_sample_whatever_its_line() -> None:
    lines = [
        "main (a.py:1);handle (b.py:10);handle (b.py:12) 3",  # recursion: once
        "main (a.py:1);other (c.py:5) 1",
        "",
        "garbage",
    ]
    text = shares(lines)
    assert text.splitlines()[0] == "samples: 4 (while holding the GIL)"
    assert "100.0%  main (a.py)" in text
    assert " 75.0%  handle (b.py)" in text
    assert " 25.0%  other (c.py)" in text


def test_own_time_is_the_innermost_frame() -> None:
    lines = [
        "main (a.py:1);handle (b.py:10);parse (d.py:3) 3",
        "main (a.py:1);handle (b.py:12) 1",
        "main (a.py:2) 4",
        "garbage",
    ]
    rows = own_shares(lines).splitlines()[1:]
    assert rows == [" 50.0%  main (a.py)", " 37.5%  parse (d.py)", " 12.5%  handle (b.py)"]
