"""A chat's moderation settings in effect, in the console, before anything is saved.

A chat without a settings row is moderated with the model's defaults (``conf.chat_settings``
reads an unsaved row); this page shows them in human units ("1 day", "8 messages"), and for a
chat with a row which values differ from the defaults (with the default beside them). The
settings list names the known chats that have no row, each a link here, and this page links to
the form that saves the chat's own row (prefilled with its id).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET

from moderation.models import ChatSettings
from telegram_bot import features
from telegram_bot.durations import spoken
from telegram_bot.numbers import ascii_int

VIEW_PERMISSION = "moderation.view_chatsettings"
CHANGE_PERMISSION = "moderation.change_chatsettings"
ADD_PERMISSION = "moderation.add_chatsettings"
SHOWN_ON_DEFAULTS = 50  # chats listed under the settings list as using the defaults


@dataclass(frozen=True)
class Setting:
    """One setting as the page shows it: its label, the value in effect, the default (both in
    words) and whether the value in effect is the default."""

    name: str
    label: str
    value: str
    default: str
    is_default: bool


def _count(singular: str, plural: str) -> Callable[[Any], str]:
    return lambda value: ngettext(singular, plural, value) % {"count": value}


def _choice(name: str) -> Callable[[Any], str]:
    field = ChatSettings._meta.get_field(name)
    return lambda value: str(dict(field.choices or ()).get(value, value))


def _chat(value: Any) -> str:
    if value is None:
        return _("none")
    return features.chat_titles([value]).get(value) or str(value)


# The settings in the order of the form, each with how its value reads.
SHOWN: tuple[tuple[str, Callable[[Any], str]], ...] = (
    ("warn_limit", _count("%(count)d warning", "%(count)d warnings")),
    ("warn_action", _choice("warn_action")),
    ("warn_action_seconds", spoken),
    ("warn_expiry_days", lambda days: spoken(days * 86400)),
    ("flood_action", _choice("flood_action")),
    ("flood_messages", _count("%(count)d message", "%(count)d messages")),
    ("flood_seconds", spoken),
    ("flood_action_seconds", spoken),
    ("violation_low", _choice("violation_low")),
    ("violation_medium", _choice("violation_medium")),
    ("violation_high", _choice("violation_high")),
    ("violation_action_seconds", spoken),
    ("log_chat_id", _chat),
)
# Labels that read better here than the model's (which speak of seconds or days).
LABELS: dict[str, Any] = {
    "warn_action_seconds": gettext_lazy("duration of the action at the limit"),
    "warn_expiry_days": gettext_lazy("warnings expire after"),
    "flood_messages": gettext_lazy("flooding is more than"),
    "flood_seconds": gettext_lazy("within"),
    "flood_action_seconds": gettext_lazy("anti-flood action duration"),
    "violation_action_seconds": gettext_lazy("violation action duration"),
    "log_chat_id": gettext_lazy("log channel"),
}


def effective_settings(row: ChatSettings) -> list[Setting]:
    """``row``'s settings (saved or not) in words, each against the model's default."""
    defaults = ChatSettings()
    settings = []
    for name, words in SHOWN:
        value, default = getattr(row, name), getattr(defaults, name)
        label = LABELS.get(name) or str(ChatSettings._meta.get_field(name).verbose_name)
        settings.append(
            Setting(name, capfirst(label), words(value), words(default), value == default)
        )
    return settings


def chats_on_defaults(limit: int = SHOWN_ON_DEFAULTS) -> list[tuple[int, str]]:
    """The known chats (groups: negative ids) without a settings row, by title."""
    chats = features.known_chats()
    with_row = set(
        ChatSettings.objects.filter(chat_id__in=list(chats)).values_list("chat_id", flat=True)
    )
    found = [
        (chat_id, title or str(chat_id))
        for chat_id, title in chats.items()
        if chat_id < 0 and chat_id not in with_row
    ]
    return sorted(found, key=lambda chat: chat[1].casefold())[:limit]


@require_GET
def chat_settings_page(request: HttpRequest, chat_id: str) -> HttpResponse:
    chat = ascii_int(chat_id, signed=True)
    if not chat:
        raise Http404("not a chat id")
    row = ChatSettings.objects.filter(chat_id=chat).first()
    title = features.chat_titles([chat]).get(chat) or (row.title if row else "") or str(chat)
    edit_url = ""
    if row is not None and request.user.has_perm(CHANGE_PERMISSION):
        edit_url = reverse("admin:moderation_chatsettings_change", args=[row.pk])
    elif row is None and request.user.has_perm(ADD_PERMISSION):
        query = urlencode({"chat_id": chat, "title": title if title != str(chat) else ""})
        edit_url = f"{reverse('admin:moderation_chatsettings_add')}?{query}"
    context = {
        **admin.site.each_context(request),
        "title": _("Moderation settings: %(chat)s") % {"chat": title},
        "chat_id": chat,
        "chat_title": title,
        "saved": row is not None,
        "updated_at": row.updated_at if row else None,
        "settings": effective_settings(row or ChatSettings(chat_id=chat)),
        "edit_url": edit_url,
        "list_url": reverse("admin:moderation_chatsettings_changelist"),
    }
    return render(request, "moderation/effective_settings.html", context)


@require_GET
def chats_settings_page(request: HttpRequest) -> HttpResponse:
    """Every known group with where its moderation settings come from (its own row, or the
    defaults), each a link to the settings in effect."""
    rows = {row.chat_id: row for row in ChatSettings.objects.all()[:500]}
    chats = {**{chat_id: "" for chat_id in rows}, **features.known_chats()}
    titles = features.chat_titles(chat_id for chat_id, title in chats.items() if not title)
    listed = []
    for chat_id, title in chats.items():
        if chat_id >= 0:
            continue
        row = rows.get(chat_id)
        name = title or titles.get(chat_id) or (row.title if row else "") or str(chat_id)
        listed.append(
            {
                "chat_id": chat_id,
                "title": name,
                "saved": row is not None,
                "url": reverse("admin:moderation-chat-settings", args=[chat_id]),
            }
        )
    listed.sort(key=lambda chat: (chat["saved"], str(chat["title"]).casefold()))
    context = {
        **admin.site.each_context(request),
        "title": _("Moderation settings by chat"),
        "chats": listed,
        "list_url": reverse("admin:moderation_chatsettings_changelist"),
    }
    return render(request, "moderation/settings_by_chat.html", context)
