# ruff: noqa: RUF001, RUF002 - Cyrillic letters are part of the folding rules
"""A chat's blocklist compiled for matching in bounded time, without regular expressions.

Text and patterns are folded the same way: Unicode compatibility forms, diacritics dropped
(``é`` is ``e``, ``й`` is ``и``), case folded, ``ё`` read as ``е``; then split into words
(letters and digits). A pattern is one to ``MAX_WORDS`` words; in a word ``*`` stands for any
letters (``spam*``, ``*casino*``, ``c*sh``), never for a word boundary. A pattern matches a
message holding its words in a row.

Why no regular expressions: a wildcard pattern compiled to one (``a.*a.*a.*b``) backtracks
in polynomial time on a long word, and an admin's pattern must not stall the message path. A
wildcard word is matched by its literal pieces (``str.startswith``, ``str.find`` left to
right, ``str.endswith``): linear in the word. Patterns are indexed by their first word (its
exact form, or the first letter of its literal prefix), so a message costs a dictionary
lookup per word plus the few candidates that share it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

MAX_WORDS = 10
MAX_PATTERN = 100
_WORD = re.compile(r"[^\W_]+")  # letters and digits of every script
_PATTERN_WORD = re.compile(r"^[^\W_]*(?:\*[^\W_]*)*$")


class PatternError(ValueError):
    """A blocklist pattern that cannot be used (said in one line)."""


def fold(text: str) -> str:
    """``text`` compared as the blocklist compares it (see the module docstring)."""
    decomposed = unicodedata.normalize("NFKD", text)
    if not decomposed.isascii():
        decomposed = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return decomposed.casefold().replace("ё", "е")  # Cyrillic yo read as ye


def words(text: str) -> list[str]:
    return _WORD.findall(fold(text))


def normalise(pattern: str) -> str:
    """The stored form of an admin's pattern: folded, its words single-spaced (``**`` as
    ``*``). PatternError when it is not one."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(_("At most %(count)s characters.") % {"count": MAX_PATTERN})
    parts = [re.sub(r"\*+", "*", part) for part in fold(pattern).split()]
    if not parts:
        raise PatternError(_("Give a word or a phrase."))
    if len(parts) > MAX_WORDS:
        raise PatternError(_("At most %(count)s words.") % {"count": MAX_WORDS})
    for part in parts:
        if not _PATTERN_WORD.match(part):
            raise PatternError(_("Letters, digits and * only."))
        if part.replace("*", "") == "":
            raise PatternError(_("A word of * alone would match every word."))
    return " ".join(parts)


@dataclass(frozen=True)
class Glob:
    """One pattern word: its literal pieces around the ``*``."""

    pieces: tuple[str, ...]

    @classmethod
    def of(cls, word: str) -> Glob:
        return cls(tuple(word.split("*")))

    @property
    def exact(self) -> bool:
        return len(self.pieces) == 1

    def matches(self, word: str) -> bool:
        pieces = self.pieces
        if len(pieces) == 1:
            return word == pieces[0]
        first, last = pieces[0], pieces[-1]
        if len(word) < len(first) + len(last) or not word.startswith(first):
            return False
        if not word.endswith(last):
            return False
        at, end = len(first), len(word) - len(last)
        for piece in pieces[1:-1]:
            found = word.find(piece, at, end)
            if found < 0:
                return False
            at = found + len(piece)
        return True


@dataclass(frozen=True)
class Entry:
    """A compiled pattern and what to do when it matches (``ref``: its row, for the audit)."""

    pattern: str
    action: str
    seconds: int | None
    globs: tuple[Glob, ...]

    def matches_at(self, tokens: Sequence[str], start: int) -> bool:
        if start + len(self.globs) > len(tokens):
            return False
        return all(glob.matches(tokens[start + i]) for i, glob in enumerate(self.globs))


@dataclass
class Blocklist:
    """Entries indexed by their first word (see the module docstring). A wildcard entry is
    tried only when its longest literal piece (``needle``) is in the folded text: one
    substring test per wildcard entry and message, so a message that holds none of them costs
    a dictionary lookup per word."""

    by_word: dict[str, list[Entry]] = field(default_factory=dict)
    wild: list[tuple[str, Entry]] = field(default_factory=list)  # (needle, entry)

    def __bool__(self) -> bool:
        return bool(self.by_word or self.wild)

    @classmethod
    def compile(cls, rows: Iterable[tuple[str, str, int | None]]) -> Blocklist:
        """From (pattern, action, seconds) rows in the order they are tried."""
        found = cls()
        for pattern, action, seconds in rows:
            globs = tuple(Glob.of(word) for word in pattern.split())
            if not globs:
                continue
            entry = Entry(pattern, action, seconds, globs)
            first = globs[0]
            if first.exact:
                found.by_word.setdefault(first.pieces[0], []).append(entry)
            else:
                needle = max((piece for glob in globs for piece in glob.pieces), key=len)
                found.wild.append((needle, entry))
        return found

    def first_match(self, text: str) -> Entry | None:
        """The first entry the text holds (in the text's order), or None."""
        if not text:
            return None
        folded = fold(text)
        tokens = _WORD.findall(folded)
        wild = [entry for needle, entry in self.wild if needle in folded]
        by_word = self.by_word
        for start, token in enumerate(tokens):
            exact = by_word.get(token)
            if exact:
                for entry in exact:
                    if entry.matches_at(tokens, start):
                        return entry
            for entry in wild:
                if entry.matches_at(tokens, start):
                    return entry
        return None
