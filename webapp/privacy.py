"""The Mini App's personal data: its sessions (a Telegram user's id, name and language, for at
most ``MINIAPP_SESSION_SECONDS``). Used-login marks, admin lists (Telegram's own, 30 s), budgets
and one-time keys hold hashes, chat ids and counts. Erasure ends the user's sessions. See
``telegram_bot.privacy``."""

from __future__ import annotations

from typing import Any

from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore

MODELS: dict[str, str] = {}
KEY_FAMILIES = {
    "miniapp": "Mini App sessions miniapp:s:*: the user's id, name and language (hours); the "
    "rest of the family (used-login hashes, chat admin lists, budgets) names nobody"
}
NOT_PERSONAL: dict[str, str] = {}
SESSIONS = "miniapp:s:"


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    return {
        "mini_app_sessions": [
            {"name": data.get("name", ""), "language": data.get("lang", ""), "expires": data["exp"]}
            for _key, data in _sessions_of(user_id, store)
        ]
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    ended = 0
    for key, _data in _sessions_of(subject.user_id, store):
        store.delete(key)
        ended += 1
    return {"mini_app_sessions": ended}


def _sessions_of(user_id: int, store: KVStore) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for key in store.scan_all(SESSIONS):
        value = store.get(key)
        data = value.get("d") if isinstance(value, dict) else None
        if isinstance(data, dict) and data.get("uid") == user_id:
            found.append((key, data))
    return found
