"""Reads of the moderation app that the console's other pages use: the names it knows of
people (from the warnings' state) and of chats (from their settings)."""

from __future__ import annotations

from collections.abc import Iterable

from moderation.models import ChatSettings, WarnState


def people_names(user_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """The latest name and @username the warnings saw of each of ``user_ids``
    (``FeatureConfig.people_names``)."""
    found: dict[int, tuple[str, str]] = {}
    rows = (
        WarnState.objects.filter(user_id__in=list(user_ids))
        .exclude(name="", username="")
        .order_by("user_id", "-pk")
        .values_list("user_id", "name", "username")
    )
    for user_id, name, username in rows:
        found.setdefault(user_id, (name, username))
    return found


def chat_titles(chat_ids: Iterable[int]) -> dict[int, str]:
    """The titles typed on chats' settings (``FeatureConfig.chat_titles``)."""
    rows = ChatSettings.objects.filter(chat_id__in=list(chat_ids)).exclude(title="")
    return dict(rows.values_list("chat_id", "title"))
