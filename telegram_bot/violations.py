"""Violation classification as a core service: the app that owns the rules registers a
classifier, the apps that act on violations call ``classify``; neither imports the other.

A classifier takes a message and the KV store and returns ``{severity: count}`` with
severities from ``SEVERITIES``. With none registered, nothing is a violation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from telegram_bot.state import KVStore
from telegram_bot.updates import Message

SEVERITIES = ("low", "medium", "high")
Classifier = Callable[[Message, KVStore], Mapping[str, int]]
_classifiers: dict[str, Classifier] = {}


def register_classifier(name: str, classifier: Classifier) -> None:
    """Add (or replace) the classifier called ``name``."""
    _classifiers[name] = classifier


def unregister_classifier(name: str) -> None:
    _classifiers.pop(name, None)


def classify(message: Message, store: KVStore) -> dict[str, int]:
    """Every registered classifier's counts, summed by severity (unknown severities dropped)."""
    counts: dict[str, int] = {}
    for classifier in list(_classifiers.values()):
        for severity, count in classifier(message, store).items():
            if severity in SEVERITIES and count > 0:
                counts[severity] = counts.get(severity, 0) + int(count)
    return counts


def worst(counts: Mapping[str, int]) -> str | None:
    """The highest severity present, or None."""
    return next((s for s in reversed(SEVERITIES) if counts.get(s)), None)
