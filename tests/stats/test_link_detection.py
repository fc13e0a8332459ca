"""``counting.text_has_link``: the cheap test before the link expression never changes what it
finds (a link from a new member is a violation the chat may act on)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats.counting import _LINK_RE, text_has_link

# Pieces of links in any case, and characters that case-fold oddly, mixed with plain text.
PIECES = [
    *("http", "HTTPS", "hTtP", "://", ":/", "www", "WWW.", "wWw", ".", "t", "T", "telegram"),
    *("TeleGram", ".me", ".ME/", "/", "me/", "\u017f", "\u212a", "\u0130", " ", "\n", "a", "x.y"),
]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join) | st.text(max_size=40))
def test_the_cheap_test_agrees_with_the_expression(text: str) -> None:
    assert text_has_link(text) == bool(_LINK_RE.search(text))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see https://example.org", True),
        ("WWW.EXAMPLE.ORG", True),
        ("join T.ME/somegroup", True),
        ("telegram.me/x", True),
        ("at.me/x is not t.me", False),
        ("a sentence. And another: fine", False),
        ("", False),
    ],
)
def test_links_are_found_in_any_case(text: str, found: bool) -> None:
    assert text_has_link(text) is found
