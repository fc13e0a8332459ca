"""Notes and filters in Telegram: ``/save``, ``/get``, ``#name``, ``/notes``, ``/clear``;
``/filter``, ``/stop``, ``/filters``; and the observer that answers ``#name`` and a filter's
keyword. A filter answers at most once per message (its first keyword in the message) and at
most ``FILTER_REPLIES_PER_MINUTE`` times a minute per chat (a KV counter ``rules:fr:<chat>:
<minute>``, read only when a filter matched); a message a chat rule deletes gets no answer."""

from __future__ import annotations

import logging
import re
import time

from django.utils.translation import gettext as _

from moderation.durations import quoted
from moderation.handlers import GROUPS, Request, moderator_command
from moderation.rights import DELETE, Refusal, chat_admins, is_group_id
from moderation.rules import blocklist, matcher, services
from moderation.rules.models import Filter, Note
from moderation.rules.replies import Content, content_of, render, reply_send
from moderation.rules.services import Change, RulesError
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight
from telegram_bot.state import KVStore
from telegram_bot.updates import Message, Update

log = logging.getLogger(__name__)
FILTER_REPLIES_PER_MINUTE = 10
_NAME = re.compile(r"^[\w-]{1,64}$")
ADMIN_TAG = "{admin}"
__all__ = ["GROUPS"]


def _change(req: Request) -> Change:
    return Change(req.chat_id, req.origin.actor, "command", req.ctx.update.update_id)


def _raw_args(req: Request) -> str:
    command = req.ctx.command
    return command.args if command is not None else ""


def _reply(message: Message) -> Message | None:
    reply = message.reply_to_message
    if reply is None or (reply.model_extra or {}).get("forum_topic_created"):
        return None
    return reply


def _name(word: str) -> str:
    name = word.lstrip("#").lower()
    if not _NAME.match(name):
        raise Refusal(
            _("%(word)s is not a note name: letters, digits, - and _.") % {"word": quoted(word)}
        )
    return name


# -- notes ------------------------------------------------------------------------------------


@moderator_command(DELETE)
def save(req: Request) -> str:
    """``/save name text`` (Rose's buttons and placeholders allowed), or as a reply."""
    parts = _raw_args(req).split(maxsplit=1)
    if not parts:
        raise Refusal(_("Say the note's name and its text: /save rules Be kind."))
    name = _name(parts[0])
    content = content_of(parts[1] if len(parts) > 1 else "", _reply(req.message))
    admin_only = ADMIN_TAG in content.text
    content.text = content.text.replace(ADMIN_TAG, "").strip()
    if not content:
        raise Refusal(_("Give the note's text, or reply to a message to save it."))
    try:
        services.note_save(_change(req), name=name, content=content, admin_only=admin_only)
    except RulesError as exc:
        return str(exc)
    return _("Saved #%(name)s.") % {"name": name}


@moderator_command(DELETE)
def clear(req: Request) -> str:
    if not req.args:
        raise Refusal(_("Say which note: /clear name."))
    name = _name(req.args[0])
    if services.note_clear(_change(req), name=name):
        return _("Removed #%(name)s.") % {"name": name}
    return _("There is no note #%(name)s.") % {"name": name}


def get(ctx: Context) -> None:
    command = ctx.command
    words = command.args.split() if command is not None else []
    if not words or ctx.chat_id is None:
        ctx.reply(_("Say which note: /get name."))
        return
    try:
        name = _name(words[0])
    except Refusal as refusal:
        ctx.reply(str(refusal))
        return
    if not _send_note(ctx, name):
        ctx.reply(_("There is no note #%(name)s.") % {"name": name})


def notes_list(ctx: Context) -> None:
    if ctx.chat_id is None:
        return
    rows = list(Note.objects.filter(chat_id=ctx.chat_id).values_list("name", "admin_only"))
    if not rows:
        ctx.reply(_("No notes here yet: admins save them with /save name text."))
        return
    names = [f"#{name}" + (" (admins)" if admin_only else "") for name, admin_only in rows]
    ctx.reply(_("Notes: %(names)s") % {"names": ", ".join(names)})


def _send_note(ctx: Context, name: str) -> bool:
    """Answer the note ``name``; False when there is none (or it is for admins, and the
    sender is not one)."""
    message = ctx.update.message
    if ctx.chat_id is None or message is None:
        return False
    note = Note.objects.filter(chat_id=ctx.chat_id, name=name).first()
    if note is None:
        return False
    if note.admin_only and not _is_admin(ctx):
        return False
    _send(ctx, note, message)
    return True


def _is_admin(ctx: Context) -> bool:
    user_id = ctx.sender.user_id
    if user_id is None or ctx.chat_id is None:
        return False
    if ctx.sender.is_admin:
        return True
    return user_id in chat_admins(ctx.store, ctx.client, ctx.chat_id)


def _send(ctx: Context, saved: Note | Filter, message: Message) -> None:
    assert ctx.chat_id is not None
    content = Content(saved.text, list(saved.buttons or []), saved.media_kind, saved.file_id)
    rules = ""
    if "{rules}" in content.text:
        rules_note = Note.objects.filter(chat_id=ctx.chat_id, name="rules").first()
        rules = rules_note.text if rules_note is not None else ""
    text = render(content.text, message.from_user, chat_title=message.chat.title or "", rules=rules)
    thread = message.message_thread_id if message.is_topic_message else None
    reply_send(
        ctx.client,
        chat_id=ctx.chat_id,
        content=content,
        text=text,
        reply_to=message.message_id,
        thread_id=thread,
    )


# -- filters ----------------------------------------------------------------------------------


def _keyword_and_text(req: Request) -> tuple[str, str]:
    args = _raw_args(req)
    if args[:1] in ('"', "“", "«"):
        closing = {'"': '"', "“": "”", "«": "»"}[args[0]]
        end = args.find(closing, 1)
        if end < 0:
            raise Refusal(_("The phrase has no closing quote."))
        keyword, rest = args[1:end], args[end + 1 :]
    else:
        parts = args.split(maxsplit=1)
        keyword, rest = (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")
    if not keyword.strip():
        raise Refusal(_('Say the keyword and the answer: /filter "hello there" Hi!'))
    try:
        return blocklist.normalise(keyword), rest
    except blocklist.PatternError as exc:
        raise Refusal(f"{quoted(keyword)}: {exc}") from None


@moderator_command(DELETE)
def filter_command(req: Request) -> str:
    """``/filter keyword|"a phrase" text`` (or as a reply to the answer to save)."""
    keyword, rest = _keyword_and_text(req)
    content = content_of(rest, _reply(req.message))
    if not content:
        raise Refusal(_("Give the answer's text, or reply to a message to save it."))
    try:
        services.filter_save(_change(req), keyword=keyword, content=content)
    except RulesError as exc:
        return str(exc)
    return _("Saved the filter %(keyword)s.") % {"keyword": quoted(keyword)}


@moderator_command(DELETE)
def stop(req: Request) -> str:
    keyword, rest = _keyword_and_text(req)
    if rest.strip():  # an unquoted phrase: the whole of it
        try:
            keyword = blocklist.normalise(f"{keyword} {rest}")
        except blocklist.PatternError as exc:
            raise Refusal(str(exc)) from None
    if services.filter_stop(_change(req), keyword=keyword):
        return _("Stopped the filter %(keyword)s.") % {"keyword": quoted(keyword)}
    return _("There is no filter %(keyword)s.") % {"keyword": quoted(keyword)}


def filters_list(ctx: Context) -> None:
    if ctx.chat_id is None:
        return
    keywords = list(Filter.objects.filter(chat_id=ctx.chat_id).values_list("keyword", flat=True))
    if not keywords:
        ctx.reply(_("No filters here yet: admins add them with /filter keyword text."))
        return
    ctx.reply(_("Filters: %(keywords)s") % {"keywords": ", ".join(keywords)})


# -- the observer -----------------------------------------------------------------------------


def _wanted(update: Update) -> tuple[str, str] | None:
    """("note", name) for a ``#name`` message, ("filter", keyword) for a message holding a
    filter's keyword; None for anything else (commands, bots, chats without notes/filters)."""
    message = update.message
    if message is None or update.chat_id is None or not is_group_id(update.chat_id):
        return None
    user = message.from_user
    if user is None or user.is_bot or update.command() is not None:
        return None
    rules = matcher.rules_of(update.chat_id)
    if not rules.answers:
        return None
    text = message.text_or_caption
    if rules.notes and text.startswith("#"):
        name = text[1:].split(maxsplit=1)[0].lower() if len(text) > 1 else ""
        if name in rules.notes:
            return "note", name
    if rules.filters:
        entry = rules.filters.first_match(text)
        if entry is not None:
            return "filter", entry.pattern
    return None


def foresee_answer(update: Update, store: KVStore) -> Foresight | None:
    """Quiet for a message that asks for no note and holds no filter's keyword."""
    return QUIET if _wanted(update) is None else None


def answer(ctx: Context) -> None:
    wanted = _wanted(ctx.update)
    message = ctx.update.message
    if wanted is None or message is None or ctx.chat_id is None:
        return
    if matcher.member_verdict(ctx.chat_id, message) is not None:
        return  # a chat rule deletes it (admins' messages are not deleted, but not answered)
    kind, name = wanted
    try:
        if kind == "note":
            _send_note(ctx, name)
            return
        window = int(time.time()) // 60
        key = f"rules:fr:{ctx.chat_id}:{window}"
        if ctx.store.increment(key, 1, 61_000) > FILTER_REPLIES_PER_MINUTE:
            return
        saved = Filter.objects.filter(chat_id=ctx.chat_id, keyword=name).first()
        if saved is not None:
            _send(ctx, saved, message)
    except TelegramApiError as exc:
        log.info("rules: %s %s not answered in %s: %s", kind, name, ctx.chat_id, exc)
