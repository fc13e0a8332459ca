"""The staff group: a forum supergroup (``SUPPORT_STAFF_CHAT_ID``) where each ticket has a topic.

Outgoing (``to_topic``, called by ``delivery.deliver`` for every entry while the ticket uses
its topic): the user's messages are copied into the topic (copyMessage: nothing is
re-uploaded), status changes close or reopen it and rename it (its name shows the state), and
answers written elsewhere (the admin site) are echoed there. Each entry goes to the topic once:
the same claim on the entry's row as the admins' notice (``admins_notice_claimed_at``), so a
re-delivered update or a second sender never posts it twice.

Faults: a staff group that is no forum (any more), or where the bot may not manage topics,
refuses the topic: the ticket falls back to the private-chat flow (``topic_failed_at``, whose
conditional UPDATE also claims the owner's one notice), and the entry goes to the admins'
private chats, so nothing is lost. A topic deleted by hand ("message thread not found"): a new
topic is created and linked (compare-and-set on the ticket row) and the copy is sent again. A
transient failure (429, 5xx, network) sends that entry to the private chats, without falling
back for good.

What staff write in a topic: ``support.topic``.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from support import assignees
from support.models import Ticket, TicketMessage
from telegram_bot.bot import get_client
from telegram_bot.client import TEXT_LIMIT, TelegramClient, clip
from telegram_bot.errors import StateError, TelegramApiError
from telegram_bot.languages import default_language
from telegram_bot.notifications import notify_admins
from telegram_bot.numbers import ascii_int
from telegram_bot.state import get_store

log = logging.getLogger(__name__)
TOPIC_NAME_LIMIT = 128  # createForumTopic / editForumTopic: 1-128 characters
THREAD_GONE = "thread not found"  # a topic deleted by hand
CLOSED_MARK = "✅ "
HIGH_MARK = "🔥 "
Event = TicketMessage.Event
# At most one notice to the owner about a refusing staff group in this time.
REFUSAL_LOCK = "lock:support:staff-group-refused"
REFUSAL_NOTICE_MS = 6 * 3600 * 1000


def staff_chat_id() -> int | None:
    """The staff group's id, or None: the private-chat flow."""
    chat_id: int | None = settings.SUPPORT_STAFF_CHAT_ID
    return chat_id


def topic_name(ticket: Ticket) -> str:
    """``#12 · @user · first words``, marked by state (closed, high priority), at most 128."""
    mark = CLOSED_MARK if not ticket.is_open else ""
    if ticket.is_open and ticket.priority == Ticket.Priority.HIGH:
        mark = HIGH_MARK
    who = _handle(ticket.user_name) or str(ticket.user_id)
    name = f"{mark}#{ticket.number} · {who}"
    words = " ".join(ticket.subject.split())
    if words:
        name = f"{name} · {words}"
    return name if len(name) <= TOPIC_NAME_LIMIT else name[: TOPIC_NAME_LIMIT - 1] + "…"


def first_name(user_name: str) -> str:
    """The first word of ``Alice Smith (@alice)``."""
    name = user_name.split("(@")[0].strip()
    return name.split()[0] if name else ""


def _handle(user_name: str) -> str:
    """``@alice`` from ``Alice (@alice)``, else the name."""
    if user_name.endswith(")") and "(@" in user_name:
        return user_name[user_name.rindex("(@") + 1 : -1]
    return user_name.strip()


# --- outgoing: the entry into the topic -------------------------------------------------------
def to_topic(client: TelegramClient, ticket: Ticket, entry: TicketMessage) -> bool:
    """Post ``entry`` into its ticket's topic once; True when the staff group has it (or
    another run is posting it), False when the caller must notify the admins' private chats
    instead (the claim is released for them)."""
    from support import delivery  # the claim and its record live with the other bookkeeping

    chat_id = staff_chat_id()
    if chat_id is None:
        return False
    if not delivery.entry_admins_notice_claim(entry=entry):
        return True  # posted, or being posted, by another run
    try:
        with _in_staff_language():
            _post(client, chat_id, ticket, entry)
    except TopicRefusedError as exc:
        _release_claim(entry)
        if exc.permanent:
            _fall_back(client, ticket, exc.reason)
        return False
    delivery.entry_admins_notified(entry=entry, messages=[])
    return True


class TopicRefusedError(Exception):
    """The staff group refused the ticket's topic: ``permanent`` (no forum, no rights) or
    transient (429, 5xx, network)."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


def _post(client: TelegramClient, chat_id: int, ticket: Ticket, entry: TicketMessage) -> None:
    topic = _topic(client, chat_id, ticket)
    from_topic = entry.source_chat_id == chat_id
    if not from_topic and not entry.internal:
        try:
            _copy(client, chat_id, topic, ticket, entry)
        except TelegramApiError as exc:
            if THREAD_GONE not in exc.description.lower():
                raise _refused(exc) from exc
            # Deleted by hand: a new topic, linked to the ticket, and the copy again.
            topic = _topic(client, chat_id, ticket, gone=topic)
            try:
                _copy(client, chat_id, topic, ticket, entry)
            except TelegramApiError as again:
                raise _refused(again) from again
    if entry.kind == TicketMessage.Kind.EVENT or entry.event:
        sync_topic(client, ticket)


def _copy(
    client: TelegramClient, chat_id: int, topic: int, ticket: Ticket, entry: TicketMessage
) -> None:
    """The user's message as it is (copyMessage), or a line for events and answers (and for
    ``/support <text>``, whose message is the command: its text alone is shown)."""
    user_message = (
        entry.sender == TicketMessage.Sender.USER and entry.kind != TicketMessage.Kind.EVENT
    )
    command = entry.kind == TicketMessage.Kind.TEXT and entry.update_id == ticket.opened_update_id
    if user_message and not command and entry.source_chat_id and entry.source_message_id:
        try:
            client.copy_message(
                chat_id=chat_id,
                message_thread_id=topic,
                from_chat_id=entry.source_chat_id,
                message_id=entry.source_message_id,
            )
            return
        except TelegramApiError as exc:
            if THREAD_GONE in exc.description.lower() or exc.retryable:
                raise
            # The user deleted it meanwhile: the text we kept instead.
            log.info("support #%s: copy failed (%s), sending the text", ticket.number, exc)
    client.send_message(
        chat_id=chat_id, message_thread_id=topic, text=clip(_line(ticket, entry), TEXT_LIMIT)
    )


def _line(ticket: Ticket, entry: TicketMessage) -> str:
    """What the topic shows for an entry it cannot copy: an event or an answer from the web."""
    who = entry.author_name or _("support")
    labels: dict[str, str] = {
        Event.CLOSED_BY_USER: _("Closed by the user."),
        Event.RESOLVED: _("Closed by %(who)s.") % {"who": who},
        Event.REOPENED_BY_ADMIN: _("Reopened by %(who)s.") % {"who": who},
        Event.REOPENED_BY_USER: _("Reopened by the user."),
    }
    if entry.event in labels:
        return labels[entry.event]
    body = entry.text if entry.kind == TicketMessage.Kind.TEXT else f"[{entry.kind}] {entry.text}"
    if entry.sender == TicketMessage.Sender.ADMIN and entry.source_chat_id is not None:
        return _("%(who)s answered in a private chat:") % {"who": who} + f"\n{body.strip()}"
    if entry.sender == TicketMessage.Sender.ADMIN:
        return _("%(who)s answered from the web:") % {"who": who} + f"\n{body.strip()}"
    return body.strip() or f"[{entry.kind}]"


def _topic(client: TelegramClient, chat_id: int, ticket: Ticket, *, gone: int | None = None) -> int:
    """The ticket's topic: the linked one, else a new one (its header first). ``gone``: the
    linked topic was deleted; a new one replaces it. Linked by compare-and-set: of two runs
    creating a topic at once, the loser deletes its own and uses the winner's."""
    current = Ticket.objects.filter(pk=ticket.pk).values_list("topic_chat_id", "topic_id").first()
    if current is not None and current[0] == chat_id and current[1] and current[1] != gone:
        return int(current[1])
    try:
        created = client.call("createForumTopic", chat_id=chat_id, name=topic_name(ticket))
    except TelegramApiError as exc:
        raise _refused(exc) from exc
    topic = int(created["message_thread_id"])
    linked = Ticket.objects.filter(pk=ticket.pk, topic_id=gone)
    if gone is None:
        linked = Ticket.objects.filter(pk=ticket.pk, topic_id__isnull=True)
    if not linked.update(topic_chat_id=chat_id, topic_id=topic):
        _quietly(client, "deleteForumTopic", chat_id=chat_id, message_thread_id=topic)
        return _topic(client, chat_id, ticket, gone=gone)
    ticket.topic_chat_id, ticket.topic_id = chat_id, topic
    header = _(
        "Ticket #%(number)s from %(who)s (id %(id)s).\n"
        "Write here to answer the user. Messages starting with %(prefix)s stay here as staff "
        "notes. Commands: /close, /reopen, /assign @name, /unassign, /priority high, "
        "/canned name."
    ) % {
        "number": ticket.number,
        "who": ticket.user_name or _("user"),
        "id": ticket.user_id,
        "prefix": settings.SUPPORT_STAFF_NOTE_PREFIX,
    }
    _quietly(client, "sendMessage", chat_id=chat_id, message_thread_id=topic, text=header)
    return topic


def sync_topic(client: TelegramClient, ticket: Ticket) -> None:
    """Make the topic show the ticket's state: its name, closed or open. Errors are logged:
    the ticket itself changed whatever the topic shows."""
    ticket.refresh_from_db()
    if ticket.topic_id is None or ticket.topic_chat_id is None:
        return
    where = {"chat_id": ticket.topic_chat_id, "message_thread_id": ticket.topic_id}
    _quietly(client, "editForumTopic", name=topic_name(ticket), **where)
    _quietly(client, "closeForumTopic" if not ticket.is_open else "reopenForumTopic", **where)


def rating_noted(ticket: Ticket, client: TelegramClient | None = None) -> None:
    """The user's rating, shown in the ticket's topic (if it has one)."""
    if ticket.topic_id is None or ticket.topic_chat_id is None:
        return
    with _in_staff_language():
        text = _("The user rated ticket #%(number)s: %(rating)s.") % {
            "number": ticket.number,
            "rating": Ticket.Rating(ticket.rating).label,
        }
    _quietly(
        client or get_client(),
        "sendMessage",
        chat_id=ticket.topic_chat_id,
        message_thread_id=ticket.topic_id,
        text=text,
    )


def delete_topics(topics: list[tuple[int, int]], client: TelegramClient | None = None) -> None:
    """Delete topics of the staff group (an erased person's tickets); failures are logged."""
    for chat_id, topic_id in topics:
        _quietly(
            client or get_client(), "deleteForumTopic", chat_id=chat_id, message_thread_id=topic_id
        )


def _quietly(client: TelegramClient, method: str, **params: Any) -> None:
    try:
        client.call(method, **params)
    except TelegramApiError as exc:  # "TOPIC_NOT_MODIFIED", a topic gone...
        log.info("staff group: %s failed: %s", method, exc)


def _refused(exc: TelegramApiError) -> TopicRefusedError:
    return TopicRefusedError(exc.description or str(exc), permanent=not exc.retryable)


def _release_claim(entry: TicketMessage) -> None:
    TicketMessage.objects.filter(pk=entry.pk, admins_notified_at__isnull=True).update(
        admins_notice_claimed_at=None
    )
    entry.admins_notice_claimed_at = None


def _fall_back(client: TelegramClient, ticket: Ticket, reason: str) -> None:
    """The ticket leaves the staff group for the private-chat flow; the one run that marks
    it tells the owner."""
    with transaction.atomic():
        marked = Ticket.objects.filter(pk=ticket.pk, topic_failed_at__isnull=True).update(
            topic_failed_at=timezone.now()
        )
    ticket.topic_failed_at = ticket.topic_failed_at or timezone.now()
    log.warning("support #%s: the staff group refused the topic: %s", ticket.number, reason)
    owner = settings.OWNER_TELEGRAM_ID
    if not marked or not owner or not _first_refusal_in_a_while():
        return
    with _in_staff_language():
        text = _(
            "Ticket #%(number)s could not get a topic in the staff group (%(reason)s), so it "
            "continues in the admins' private chats, as will other tickets until this is "
            "fixed. Check that the group is a forum and that the bot is an administrator with "
            "the right to manage topics."
        ) % {"number": ticket.number, "reason": reason[:200]}
    _quietly(client, "sendMessage", chat_id=owner, text=text)


def _first_refusal_in_a_while() -> bool:
    """One notice to the owner for a broken staff group, not one per ticket: the first
    refusal in ``REFUSAL_NOTICE_MS`` takes the lock. A state store that fails tells the owner
    (twice is better than never)."""
    try:
        return get_store().set_if_absent(REFUSAL_LOCK, True, REFUSAL_NOTICE_MS)
    except StateError as exc:
        log.warning("staff group notice lock unavailable: %s", exc)
        return True


def _in_staff_language() -> translation.override:
    """The staff group reads the site's language."""
    return translation.override(default_language())


# --- reminders --------------------------------------------------------------------------------
def remind_waiting(*, client: TelegramClient | None = None, limit: int = 100) -> int:
    """Remind once about each open ticket whose user has waited longer than
    ``SUPPORT_REMIND_AFTER_MINUTES``: in its topic, naming the assignee, else to the admins'
    private chats. Exactly once per wait: ``reminded_at`` is set by a conditional UPDATE (on
    the wait it was read with) before anything is sent, so two workers never both remind,
    and a new wait (the user writes again after an answer) may remind again. Returns how many
    were reminded."""
    minutes = settings.SUPPORT_REMIND_AFTER_MINUTES
    due = timezone.now() - timedelta(minutes=minutes)
    waiting = list(
        Ticket.objects.filter(
            status=Ticket.Status.OPEN,
            waiting_since__lte=due,
            reminded_at__isnull=True,
        ).order_by("waiting_since")[:limit]
    )
    reminded = 0
    for ticket in waiting:
        claimed = Ticket.objects.filter(
            pk=ticket.pk, reminded_at__isnull=True, waiting_since=ticket.waiting_since
        ).update(reminded_at=timezone.now())
        if not claimed:
            continue
        reminded += 1
        _remind(client or get_client(), ticket, minutes)
    return reminded


def _remind(client: TelegramClient, ticket: Ticket, minutes: int) -> None:
    """In the topic, naming the assignee (a Telegram assignee by a mention that notifies
    them, an @username as written); else to the admins' private chats."""
    label = ticket.assignee
    who = assignees.assignee_names([label])[label] if label else ""
    with _in_staff_language():
        text = _("⏰ Ticket #%(number)s has waited for an answer for over %(minutes)d minutes.") % {
            "number": ticket.number,
            "minutes": minutes,
        }
    entities: list[dict[str, Any]] = []
    if who:
        text = f"{who}: {text}"
        user_id = ascii_int(label[3:]) if label.startswith("tg:") else None
        if user_id is not None:
            length = len(who.encode("utf-16-le")) // 2  # Telegram counts UTF-16 code units
            person = {"id": user_id, "is_bot": False, "first_name": who[:64]}
            entities = [{"type": "text_mention", "offset": 0, "length": length, "user": person}]
    if ticket.topic_id is not None and ticket.topic_chat_id is not None:
        params: dict[str, Any] = {"entities": entities} if entities else {}
        try:
            client.send_message(
                chat_id=ticket.topic_chat_id,
                message_thread_id=ticket.topic_id,
                text=text,
                **params,
            )
            return
        except TelegramApiError as exc:
            log.warning("support #%s: reminder in the topic failed: %s", ticket.number, exc)
    notify_admins(lambda: text, purpose=f"support #{ticket.number} reminder", client=client)
