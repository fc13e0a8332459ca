"""The moderation page of the Telegram /panel: pick a chat, then change its settings.

Callback data: ``mod:p`` (the chats), ``mod:c:<chat>`` (one chat), ``mod:s:<chat>:<field>=<value>``
(one setting and the value the button sets: ``flood=on``, ``warn=4``, ``high=ban``; see
``services.settings_set``). A button says what it sets, so a press on an older copy of the page
sets the same again. Every change is validated and recorded in the audit log.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from moderation import services
from moderation.durations import describe
from moderation.models import ChatSettings
from telegram_bot.numbers import ascii_int

Markup = dict[str, Any]


def chats_view() -> tuple[str, Markup]:
    chats = services.known_chats()
    rows = [
        [{"text": _chat_label(chat_id), "callback_data": f"mod:c:{chat_id}"}] for chat_id in chats
    ]
    rows.append([{"text": _("Back"), "callback_data": "panel:home"}])
    if not chats:
        return _("Moderation: no chat yet. Use a moderation command in a group first."), {
            "inline_keyboard": rows
        }
    return _("Moderation: pick a chat."), {"inline_keyboard": rows}


def chat_view(row: ChatSettings) -> tuple[str, Markup]:
    flood = (
        _("off")
        if row.flood_action == "none"
        else _("%(action)s %(duration)s after more than %(messages)s messages in %(seconds)ss")
        % {
            "action": row.flood_action,
            "duration": describe(row.flood_action_seconds),
            "messages": row.flood_messages,
            "seconds": row.flood_seconds,
        }
    )
    lines = [
        _("Moderation of %(chat)s") % {"chat": _chat_label(row.chat_id)},
        _("Warnings: %(limit)s -> %(action)s %(duration)s, expire after %(days)sd")
        % {
            "limit": row.warn_limit,
            "action": row.warn_action,
            "duration": describe(row.warn_action_seconds),
            "days": row.warn_expiry_days,
        },
        _("Anti-flood: %(flood)s") % {"flood": flood},
        _("Violations: %(actions)s")
        % {
            "actions": ", ".join(
                f"{s} -> {row.violation_action(s)}" for s in ("low", "medium", "high")
            )
        },
    ]
    c = row.chat_id
    flood_on = row.flood_action != "none"
    flood_button = _("Anti-flood: turn off") if flood_on else _("Anti-flood: turn on")
    lower = max(1, row.warn_limit - 1)
    higher = min(services.WARN_LIMIT_MAX, row.warn_limit + 1)
    rows = [
        [{"text": flood_button, "callback_data": f"mod:s:{c}:flood={'off' if flood_on else 'on'}"}],
        [
            {"text": _("Warn limit -1"), "callback_data": f"mod:s:{c}:warn={lower}"},
            {"text": _("Warn limit +1"), "callback_data": f"mod:s:{c}:warn={higher}"},
        ],
        [
            {
                "text": f"{s}: {row.violation_action(s)}",
                "callback_data": f"mod:s:{c}:{s}={_next_action(row.violation_action(s))}",
            }
            for s in ("low", "medium", "high")
        ],
        [{"text": _("Back"), "callback_data": "mod:p"}],
    ]
    return "\n".join(lines), {"inline_keyboard": rows}


def _next_action(current: str) -> str:
    cycle = [str(action) for action in services.VIOLATION_CYCLE]
    index = cycle.index(current) if current in cycle else 0
    return cycle[(index + 1) % len(cycle)]


def parse(data: str) -> tuple[str, int | None, str, str]:
    """(page, chat id, field, value) of callback ``data``; ValueError when malformed (the value
    itself is checked by ``services.settings_set``)."""
    parts = data.split(":")
    if parts == ["mod", "p"]:
        return "chats", None, "", ""
    if len(parts) == 3 and parts[1] == "c":
        return "chat", _chat_id(parts[2]), "", ""
    if len(parts) == 4 and parts[1] == "s":
        field, _sep, value = parts[3].partition("=")
        if field in services.PANEL_FIELDS and value:
            return "set", _chat_id(parts[2]), field, value
    raise ValueError(f"not a moderation button: {data[:64]!r}")


def _chat_id(text: str) -> int:
    # ASCII digits (int() refuses "²"), and a 64-bit integer (the database's): Telegram's
    # group ids have at most 52 significant bits.
    chat_id = ascii_int(text, digits=16, signed=True)
    if chat_id is None or chat_id >= 0:
        raise ValueError("a group chat id is negative")
    return chat_id


def _chat_label(chat_id: int) -> str:
    title = ChatSettings.objects.filter(chat_id=chat_id).values_list("title", flat=True).first()
    return f"{title} ({chat_id})" if title else str(chat_id)
