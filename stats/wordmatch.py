# ruff: noqa: RUF001, RUF002 - Cyrillic look-alikes are what this module is about
"""Word lists that survive obfuscation: profanity and banned words.

A word is normalised before matching: case folded, ``ё`` read as ``е``, separators inside it
dropped (``f.u.c.k``), then read twice, once as Latin and once as Cyrillic, with look-alikes and
letter-for-symbol swaps mapped into that script (``@``->a, ``0``->o, ``3``->e in Latin and ->з in
Cyrillic, ``$``->s/с, Cyrillic ``х``->x, Latin ``y``->у, ...). The Latin reading is matched
against the Latin patterns when the word has a Latin letter or a digit/symbol swap, the
Cyrillic reading against the Cyrillic patterns when it has a Cyrillic letter.

Repeated letters: a word and a pattern match when they have the same letters once runs are
collapsed, and every run in the word is at least as long as in the pattern. So ``fuuuck``
matches ``fuck`` but ``as`` does not match ``ass``.

Pattern syntax (files in ``stats/wordlists/``, admin settings): ``word`` the whole word,
``stem*`` a word starting with it, ``*root*`` anywhere inside a word. Lines starting with ``#``
are comments. Nothing is downloaded: the lists ship with the code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

WORDLIST_DIR = Path(__file__).resolve().parent / "wordlists"
SHIPPED_LISTS = ("en.txt", "ru.txt")
SHIPPED_ALLOWED = "allowed.txt"

_TO_LATIN = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ѕ": "s",
        "@": "a",
        "4": "a",
        "0": "o",
        "3": "e",
        "1": "i",
        "!": "i",
        "|": "i",
        "$": "s",
        "5": "s",
        "7": "t",
        "8": "b",
        "€": "e",
    }
)
_TO_CYRILLIC = str.maketrans(
    {
        "a": "а",
        "b": "б",
        "c": "с",
        "e": "е",
        "k": "к",
        "m": "м",
        "h": "н",
        "o": "о",
        "p": "р",
        "t": "т",
        "x": "х",
        "y": "у",
        "u": "и",
        "n": "п",
        "r": "г",
        "@": "а",
        "0": "о",
        "3": "з",
        "4": "ч",
        "6": "б",
        "9": "я",
        "$": "с",
    }
)
_SWAP_SYMBOLS = frozenset("@$!|€0134567890")
_EDGE = re.compile(r"^[^\w@$€]+|[^\w@$€]+$")
MEMO_MAX = 20_000
_INNER_SEPARATORS = re.compile(r"[.\-_*'’`\"~]+")
_CYRILLIC = re.compile(r"[а-я]")
_LATIN = re.compile(r"[a-z]")


@dataclass(frozen=True)
class Pattern:
    skeleton: str  # letters with runs collapsed
    runs: tuple[int, ...]  # the length of each run
    mode: str  # "word", "prefix" or "infix"


@dataclass(frozen=True)
class Readings:
    latin: tuple[str, tuple[int, ...]] | None
    cyrillic: tuple[str, tuple[int, ...]] | None


class WordMatcher:
    """Matches words against patterns; ``allowed`` words are never matched."""

    def __init__(self, patterns: Iterable[str], *, allowed: Iterable[str] = ()) -> None:
        self._latin: list[Pattern] = []
        self._cyrillic: list[Pattern] = []
        self._latin_words: dict[str, list[tuple[int, ...]]] = {}
        self._cyrillic_words: dict[str, list[tuple[int, ...]]] = {}
        for line in patterns:
            self._add(line)
        self._allowed = {_fold(word) for word in _lines(allowed)}
        # Chat repeats its words: each is read once per matcher (the counting config rebuilds
        # the matcher every few seconds, and the memo is bounded).
        self._seen: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self._latin or self._cyrillic or self._latin_words or self._cyrillic_words)

    def count(self, text: str) -> int:
        """How many whitespace-separated words of ``text`` match."""
        return sum(1 for token in text.split() if self.matches(token))

    def matches(self, token: str) -> bool:
        seen = self._seen.get(token)
        if seen is None:
            if len(self._seen) >= MEMO_MAX:
                self._seen.clear()
            seen = self._seen[token] = self._matches(token)
        return seen

    def _matches(self, token: str) -> bool:
        folded = _fold(token)
        if not folded or folded in self._allowed:
            return False
        readings = read(folded)
        if readings.latin and _hit(readings.latin, self._latin_words, self._latin):
            return True
        return bool(
            readings.cyrillic and _hit(readings.cyrillic, self._cyrillic_words, self._cyrillic)
        )

    def _add(self, line: str) -> None:
        raw = line.strip()
        if not raw or raw.startswith("#"):
            return
        mode = "word"
        if raw.startswith("*") and raw.endswith("*") and len(raw) > 2:
            mode, raw = "infix", raw[1:-1]
        elif raw.endswith("*") and len(raw) > 1:
            mode, raw = "prefix", raw[:-1]
        folded = _fold(raw)
        if not folded:
            return
        cyrillic = bool(_CYRILLIC.search(folded))
        text = folded.translate(_TO_CYRILLIC if cyrillic else _TO_LATIN)
        skeleton, runs = _runs(text)
        if mode == "word":
            index = self._cyrillic_words if cyrillic else self._latin_words
            index.setdefault(skeleton, []).append(runs)
        else:
            (self._cyrillic if cyrillic else self._latin).append(Pattern(skeleton, runs, mode))


def read(folded: str) -> Readings:
    """The Latin and Cyrillic readings of a folded word (None where the script is absent)."""
    has_cyrillic = bool(_CYRILLIC.search(folded))
    has_latin = bool(_LATIN.search(folded)) or (
        not has_cyrillic and any(ch in _SWAP_SYMBOLS for ch in folded)
    )
    latin = _runs(folded.translate(_TO_LATIN)) if has_latin else None
    cyrillic = _runs(folded.translate(_TO_CYRILLIC)) if has_cyrillic else None
    return Readings(latin, cyrillic)


@cache
def shipped_patterns() -> tuple[str, ...]:
    lines: list[str] = []
    for name in SHIPPED_LISTS:
        lines.extend((WORDLIST_DIR / name).read_text(encoding="utf-8").splitlines())
    return tuple(lines)


@cache
def shipped_allowed() -> tuple[str, ...]:
    return tuple((WORDLIST_DIR / SHIPPED_ALLOWED).read_text(encoding="utf-8").splitlines())


def lines_of(text: str) -> list[str]:
    """Non-empty, non-comment lines of an operator's text field."""
    return list(_lines(text.splitlines()))


def _lines(lines: Iterable[str]) -> Iterable[str]:
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield stripped


def _fold(token: str) -> str:
    folded = token.casefold().replace("ё", "е")
    folded = _EDGE.sub("", folded)
    return _INNER_SEPARATORS.sub("", folded)


def _runs(text: str) -> tuple[str, tuple[int, ...]]:
    letters: list[str] = []
    runs: list[int] = []
    for ch in text:
        if letters and letters[-1] == ch:
            runs[-1] += 1
        else:
            letters.append(ch)
            runs.append(1)
    return "".join(letters), tuple(runs)


def _hit(
    reading: tuple[str, tuple[int, ...]],
    words: dict[str, list[tuple[int, ...]]],
    patterns: list[Pattern],
) -> bool:
    skeleton, runs = reading
    if any(_fits(runs, 0, wanted) for wanted in words.get(skeleton, ())):
        return True
    for pattern in patterns:
        if pattern.mode == "prefix":
            if skeleton.startswith(pattern.skeleton) and _fits(runs, 0, pattern.runs):
                return True
            continue
        start = skeleton.find(pattern.skeleton)
        while start != -1:
            if _fits(runs, start, pattern.runs):
                return True
            start = skeleton.find(pattern.skeleton, start + 1)
    return False


def _fits(runs: tuple[int, ...], start: int, wanted: tuple[int, ...]) -> bool:
    return all(runs[start + i] >= length for i, length in enumerate(wanted))
