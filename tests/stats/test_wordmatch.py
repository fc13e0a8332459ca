# ruff: noqa: RUF001 - obfuscated words mix Latin and Cyrillic letters on purpose
"""Profanity and banned words survive case, repeats, symbol swaps and look-alike letters."""

from __future__ import annotations

import pytest

from stats.wordmatch import WordMatcher, shipped_allowed, shipped_patterns


@pytest.fixture(scope="module")
def shipped() -> WordMatcher:
    return WordMatcher(shipped_patterns(), allowed=shipped_allowed())


@pytest.mark.parametrize(
    "word",
    [
        "fuck", "FUCK", "Fuuuuuck", "f.u.c.k", "motherfucker,", "sh1t", "$hit", "b!tch",
        "a$$hole", "a55", "ass", "bullshit",
        "хуй", "ХУЙ", "xуй", "хyй", "пиздец", "пи3дец", "бляяяя", "6ля", "сука", "cyкa",
        "ёбаный", "еб@ть", "заебал", "нахуй", "охуеть", "blyat",
    ],
)  # fmt: skip
def test_it_catches_profanity_however_it_is_spelled(shipped: WordMatcher, word: str) -> None:
    assert shipped.matches(word)


@pytest.mark.parametrize(
    "word",
    [
        "hello", "as", "class", "pass", "assassin", "assume", "cocktail", "Dickens",
        "Scunthorpe", "shiitake", "ebay", "hell", "2024", "!!!", "—",
        "небо", "неба", "хлеб", "мудрый", "мандарин", "скрипт", "трахея", "сук", "привет",
    ],
)  # fmt: skip
def test_it_leaves_innocent_words_alone(shipped: WordMatcher, word: str) -> None:
    assert not shipped.matches(word)


def test_it_counts_each_profane_word_of_a_text(shipped: WordMatcher) -> None:
    assert shipped.count("what the FUUUCK is this sh1t, блять!") == 3
    assert shipped.count("a perfectly clean sentence") == 0


def test_it_honours_the_operators_allowed_words() -> None:
    matcher = WordMatcher(shipped_patterns(), allowed=["Bastard"])
    assert not matcher.matches("bastard")
    assert matcher.matches("bitch")


def test_it_reads_word_stem_and_root_patterns() -> None:
    matcher = WordMatcher(["casino*", "jackpot", "*crypt*", "# a comment", ""])
    assert matcher.matches("CASINOS") and matcher.matches("c@sino")
    assert matcher.matches("jackpot!") and not matcher.matches("jackpots")
    assert matcher.matches("cryptocurrency") and matcher.matches("encrypted")
    assert not matcher.matches("comment")
    assert not WordMatcher(["# nothing but comments"])
