"""Numbers written in outside input (callback data, command arguments, headers, form and
search fields, KV key parts): ASCII digits only. ``str.isdigit()`` also accepts "²", which
``int()`` refuses (a crash on hostile input), and "٣", which ``int()`` reads as 3."""

from __future__ import annotations


def ascii_int(text: str, *, digits: int = 18, signed: bool = False) -> int | None:
    """The integer ``text`` spells in 1 to ``digits`` ASCII digits, after one "-" when
    ``signed``; None for anything else (18 digits always fit in 64 bits)."""
    body = text[1:] if signed and text.startswith("-") else text
    if not 0 < len(body) <= digits or not (body.isascii() and body.isdigit()):
        return None
    return int(text)
