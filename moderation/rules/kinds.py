"""Lock kinds, with Rose's names and their aliases, and how each is recognised in a message.

Links come from Telegram's own entities (``url``, ``text_link``), never from guessing in the
text; an invite link is a link to t.me/+..., t.me/joinchat/... or tg://join (another chat's
invitation). ``bots`` is about members adding bots (a service message), the others about what a
member writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from django.utils.translation import gettext_lazy as _

from telegram_bot.updates import Message

MENTIONS_MAX = 5  # the "mentions" lock: this many mentions of members in one message or more

KIND_CHOICES = [
    ("url", _("links")),
    ("invitelink", _("invite links to other chats")),
    ("forward", _("forwards")),
    ("forwarduser", _("forwards from users")),
    ("forwardchannel", _("forwards from channels and groups")),
    ("photo", _("photos")),
    ("video", _("videos")),
    ("document", _("documents")),
    ("audio", _("audio")),
    ("voice", _("voice messages")),
    ("videonote", _("video notes")),
    ("sticker", _("stickers")),
    ("gif", _("GIFs")),
    ("poll", _("polls")),
    ("contact", _("contacts")),
    ("location", _("locations")),
    ("game", _("games")),
    ("inline", _("messages via inline bots")),
    ("mentions", _("mentions of many members")),
    ("bots", _("bots added by members")),
    ("rtl", _("right-to-left scripts")),
    ("cyrillic", _("Cyrillic script")),
    ("cjk", _("Chinese, Japanese and Korean scripts")),
]
KINDS = tuple(kind for kind, _label in KIND_CHOICES)
ALIASES = {
    "link": "url",
    "links": "url",
    "urls": "url",
    "invite": "invitelink",
    "invitelinks": "invitelink",
    "forwards": "forward",
    "photos": "photo",
    "videos": "video",
    "file": "document",
    "files": "document",
    "documents": "document",
    "voices": "voice",
    "videonotes": "videonote",
    "video_note": "videonote",
    "stickers": "sticker",
    "gifs": "gif",
    "animation": "gif",
    "polls": "poll",
    "contacts": "contact",
    "locations": "location",
    "venue": "location",
    "games": "game",
    "via": "inline",
    "mention": "mentions",
    "bot": "bots",
    "arabic": "rtl",
    "hebrew": "rtl",
}


def kind_named(word: str) -> str | None:
    """The lock kind a word names (its Rose name or an alias), or None."""
    word = word.lower()
    found = ALIASES.get(word, word)
    return found if found in KINDS else None


def label(kind: str) -> str:
    return str(dict(KIND_CHOICES).get(kind, kind))


# -- recognising ------------------------------------------------------------------------------

_INVITE_HOSTS = frozenset({"t.me", "telegram.me", "telegram.dog"})
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_CYRILLIC = re.compile("[\u0400-\u052f]")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def links(message: Message) -> Iterator[str]:
    """The links of a message's text or caption, as Telegram marked them."""
    text = message.text if message.text is not None else (message.caption or "")
    entities = message.entities if message.text is not None else message.caption_entities
    if not entities:
        return
    units = text.encode("utf-16-le")  # Telegram's offsets count UTF-16 code units
    for entity in entities:
        if entity.type == "text_link" and entity.url:
            yield entity.url
        elif entity.type == "url":
            start, end = 2 * entity.offset, 2 * (entity.offset + entity.length)
            yield units[start:end].decode("utf-16-le", "replace")


def host_of(link: str) -> str:
    """The host of a link, lower case, without ``www.``; "" when it has none."""
    if "://" not in link:
        link = "http://" + link
    try:
        host = urlsplit(link).hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


def is_invite(link: str) -> bool:
    lowered = link.lower()
    if lowered.startswith("tg://join"):
        return True
    if "://" not in lowered:
        lowered = "http://" + lowered
    try:
        parts = urlsplit(lowered)
    except ValueError:
        return False
    host = (parts.hostname or "").removeprefix("www.")
    path = parts.path.lstrip("/")
    return host in _INVITE_HOSTS and (path.startswith("+") or path.startswith("joinchat/"))


def allowed(host: str, domains: frozenset[str]) -> bool:
    """Whether ``host`` is one of ``domains`` or a subdomain of one."""
    if not host:
        return False
    parts = host.split(".")
    return any(".".join(parts[i:]) in domains for i in range(len(parts) - 1))


def _extra(message: Message, name: str) -> bool:
    return bool((message.model_extra or {}).get(name))


def _forward_kind(message: Message) -> str | None:
    """ "user" or "chat" for a forward (from a user, or from a channel or group), else None."""
    extra = message.model_extra or {}
    origin = extra.get("forward_origin")
    if isinstance(origin, dict):
        return "user" if origin.get("type") in ("user", "hidden_user") else "chat"
    if extra.get("forward_from_chat"):
        return "chat"
    if extra.get("forward_from") or extra.get("forward_sender_name") or extra.get("forward_date"):
        return "user"
    return None


def _mentions(message: Message) -> int:
    entities = message.entities if message.text is not None else message.caption_entities
    return sum(1 for e in entities or () if e.type in ("mention", "text_mention"))


def _text(message: Message) -> str:
    return message.text_or_caption


_FORWARD = frozenset(
    {"forward_origin", "forward_from", "forward_from_chat", "forward_sender_name", "forward_date"}
)
_ENTITIES = frozenset({"entities", "caption_entities"})
_TEXT = frozenset({"text", "caption"})
# The fields without which a message cannot be of a kind: a lock whose fields a message lacks
# is not checked at all (most messages are plain text).
FIELDS: dict[str, frozenset[str]] = {
    "url": _ENTITIES,
    "invitelink": _ENTITIES,
    "mentions": _ENTITIES,
    "forward": _FORWARD,
    "forwarduser": _FORWARD,
    "forwardchannel": _FORWARD,
    "photo": frozenset({"photo"}),
    "video": frozenset({"video"}),
    "document": frozenset({"document"}),
    "audio": frozenset({"audio"}),
    "voice": frozenset({"voice"}),
    "videonote": frozenset({"video_note"}),
    "sticker": frozenset({"sticker"}),
    "gif": frozenset({"animation"}),
    "poll": frozenset({"poll"}),
    "contact": frozenset({"contact"}),
    "location": frozenset({"location", "venue"}),
    "game": frozenset({"game"}),
    "inline": frozenset({"via_bot"}),
    "rtl": _TEXT,
    "cyrillic": _TEXT,
    "cjk": _TEXT,
}


def present_fields(message: Message) -> frozenset[str]:
    """The fields a message came with (declared or extra)."""
    extra = message.model_extra
    return frozenset(message.model_fields_set.union(extra) if extra else message.model_fields_set)


Check = Callable[[Message], bool]
# url and invitelink need the chat's allow-list: ``moderation.rules.matcher`` checks them.
CHECKS: dict[str, Check] = {
    "forward": lambda m: _forward_kind(m) is not None,
    "forwarduser": lambda m: _forward_kind(m) == "user",
    "forwardchannel": lambda m: _forward_kind(m) == "chat",
    "photo": lambda m: bool(m.photo),
    "video": lambda m: _extra(m, "video"),
    "document": lambda m: m.document is not None and not _extra(m, "animation"),
    "audio": lambda m: _extra(m, "audio"),
    "voice": lambda m: m.voice is not None,
    "videonote": lambda m: m.video_note is not None,
    "sticker": lambda m: _extra(m, "sticker"),
    "gif": lambda m: _extra(m, "animation"),
    "poll": lambda m: _extra(m, "poll"),
    "contact": lambda m: _extra(m, "contact"),
    "location": lambda m: _extra(m, "location") or _extra(m, "venue"),
    "game": lambda m: _extra(m, "game"),
    "inline": lambda m: m.via_bot is not None,
    "mentions": lambda m: _mentions(m) >= MENTIONS_MAX,
    "rtl": lambda m: _RTL.search(_text(m)) is not None,
    "cyrillic": lambda m: _CYRILLIC.search(_text(m)) is not None,
    "cjk": lambda m: _CJK.search(_text(m)) is not None,
}
