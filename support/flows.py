"""The support desk's use cases: which ticket a message belongs to, then write, then deliver.

Called by the Telegram side (``conversation.py``, which the handlers call once per update) and
the admin site (``views.py``). Writes go through ``services`` (short transactions), Telegram
traffic through ``delivery`` (outside any transaction, so that no row lock is held while
Telegram answers). Every flow driven by an update is preceded by ``resume``: if that update
already produced its entry (a re-delivery after a crash or a 503), only the pending
deliveries are finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext, gettext_lazy, ngettext

from support import delivery, selectors, services
from support.conf import reopen_window
from support.delivery import Delivery, clip
from support.errors import NotYourTicketError, TicketClosedError
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Content, check_answer, parse_ticket_number
from telegram_bot.bot import bot_id

CLOSE_CHOICES = 10


@dataclass(frozen=True)
class Incoming:
    """A private message, reduced to what the support desk uses."""

    update_id: int
    chat_id: int
    user_id: int
    user_name: str
    message_id: int
    reply_to_message_id: int | None
    content: Content | None
    content_error: str = ""
    is_admin: bool = False

    @property
    def author(self) -> Author:
        return Author(name=self.user_name, telegram_id=self.user_id)

    @property
    def origin(self) -> Origin:
        return Origin(update_id=self.update_id, chat_id=self.chat_id, message_id=self.message_id)


@dataclass(frozen=True)
class Answer:
    """What the handler says back in the chat the message came from."""

    text: str
    markup: dict[str, Any] | None = None


def resume(update_id: int) -> tuple[TicketMessage, Delivery] | None:
    """If ``update_id`` already created its entry, finish its deliveries and return it."""
    entry = selectors.entry_for_update(update_id)
    if entry is None:
        return None
    return entry, delivery.deliver(entry)


def current_bot_id() -> int:
    return bot_id() or 0


# --- user side -------------------------------------------------------------------------------
def open_ticket(incoming: Incoming, content: Content) -> TicketMessage:
    """Open a ticket; the confirmation (``#N``) and the admin notifications follow."""
    entry, _ = services.ticket_open(
        bot_id=current_bot_id(),
        user_id=incoming.user_id,
        chat_id=incoming.chat_id,
        author=incoming.author,
        origin=incoming.origin,
        content=content,
    )
    delivery.deliver(entry)
    return entry


def user_message(incoming: Incoming) -> Answer | None:
    """A plain private message from a user: a follow-up, a reopening reply, or guidance.

    A reply to a bot message of a ticket (or to the user's own ticket message) goes to that
    ticket, reopening it if it was closed within the reopen window. Any other message goes to
    the user's newest open ticket. Without an open ticket nothing is stored and the user is
    told how to open or reopen one: a plain message never opens or reopens a ticket by itself.
    """
    return _user_message(incoming)[1]


def reply_target(incoming: Incoming, *, reopenable_only: bool = False) -> Ticket | None:
    """The ticket a reply explicitly addresses, if any.

    For an admin, the ticket of the notification (or prompt) replied to, whatever its status
    (a closed one is refused with a reason). For anyone, their own ticket whose message (the
    bot's, or their own) was replied to; with ``reopenable_only``, only if it can still take
    the message (open, or closed within the reopen window). A workflow step hands such a
    message to the ordinary path instead of consuming it, so a reply never opens a new ticket
    nor answers another one.
    """
    if incoming.reply_to_message_id is None:
        return None
    if incoming.is_admin:
        ticket = selectors.ticket_for_admin_message(
            chat_id=incoming.chat_id, message_id=incoming.reply_to_message_id
        )
        if ticket is not None:
            return ticket
    ticket = selectors.ticket_for_user_reply(
        chat_id=incoming.chat_id, user_id=incoming.user_id, message_id=incoming.reply_to_message_id
    )
    if ticket is None or not reopenable_only:
        return ticket
    return ticket if ticket.is_open or selectors.reopenable(ticket) else None


EXPIRED_REQUEST = gettext_lazy(
    "Your /support request expired. Send /support again to open a ticket."
)


def after_expired_request(incoming: Incoming) -> Answer:
    """The message that comes after a ``/support`` wait expired (and replies to no ticket).

    It does not open a ticket: the user is told to start again. But a user with an open ticket
    does not lose it either: like any plain message it is added to their newest open ticket,
    and they are told where it went.
    """
    if not selectors.open_tickets_of(incoming.user_id).exists():
        return Answer(EXPIRED_REQUEST)
    entry, refused = _user_message(incoming)
    if entry is None:
        return Answer(f"{refused.text}\n{EXPIRED_REQUEST}" if refused else EXPIRED_REQUEST)
    return Answer(
        gettext(
            "Your /support request had expired, so this message was added to your open ticket "
            "#%(number)s. To open a new ticket instead, send /support again."
        )
        % {"number": entry.ticket.number}
    )


def _user_message(incoming: Incoming) -> tuple[TicketMessage | None, Answer | None]:
    """``user_message``; also returns the entry it stored, if any."""
    target = None
    if incoming.reply_to_message_id is not None:
        target = selectors.ticket_for_user_reply(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            message_id=incoming.reply_to_message_id,
        )
    replied = target is not None
    if target is None:
        target = selectors.open_tickets_of(incoming.user_id).first()
        if target is None:
            return None, _no_open_ticket(incoming)
    if not target.is_open and not selectors.reopenable(target):
        days = reopen_window().days
        return None, Answer(
            ngettext(
                "Ticket #%(number)s was closed more than %(count)d day ago and cannot be "
                "reopened. Send /support <your question> to open a new ticket.",
                "Ticket #%(number)s was closed more than %(count)d days ago and cannot be "
                "reopened. Send /support <your question> to open a new ticket.",
                days,
            )
            % {"number": target.number, "count": days}
        )
    if incoming.content is None:
        return None, Answer(incoming.content_error)
    try:
        entry, _ = services.ticket_add_user_message(
            ticket_id=target.pk,
            author=incoming.author,
            origin=incoming.origin,
            content=incoming.content,
            reopen=replied,
        )
    except TicketClosedError as exc:  # closed (and expired) between the read and the write
        return None, Answer(exc.user_message)
    delivery.deliver(entry)
    return entry, None


def close_request(incoming: Incoming, args: str) -> Answer | None:
    """``/close``: the ticket named by number, else the one replied to, else the only open
    one; with several open tickets the user picks one with a button."""
    if args:
        number = parse_ticket_number(args)
        if number is None:
            return Answer(gettext("Usage: /close, or /close <ticket number> such as /close 12."))
        ticket = selectors.ticket_by_number(bot_id=current_bot_id(), number=number)
        if ticket is None or ticket.user_id != incoming.user_id:
            return Answer(
                gettext("You have no ticket #%(number)s.") % {"number": number}
            )  # whether it exists or not
        return close_by_user(ticket=ticket, author=incoming.author, origin=incoming.origin)
    if incoming.reply_to_message_id is not None:
        replied = selectors.ticket_for_user_reply(
            chat_id=incoming.chat_id,
            user_id=incoming.user_id,
            message_id=incoming.reply_to_message_id,
        )
        if replied is not None:
            return close_by_user(ticket=replied, author=incoming.author, origin=incoming.origin)
    open_tickets = list(selectors.open_tickets_of(incoming.user_id)[:CLOSE_CHOICES])
    if not open_tickets:
        return Answer(gettext("You have no open support ticket."))
    if len(open_tickets) == 1:
        return close_by_user(ticket=open_tickets[0], author=incoming.author, origin=incoming.origin)
    rows = [
        [
            {
                "text": clip(
                    gettext("Close #%(number)s: %(subject)s")
                    % {"number": t.number, "subject": t.subject},
                    60,
                ),
                "callback_data": f"sup:close:{t.pk}",
            }
        ]
        for t in open_tickets
    ]
    return Answer(gettext("Which ticket should be closed?"), {"inline_keyboard": rows})


def close_by_user(*, ticket: Ticket, author: Author, origin: Origin) -> Answer | None:
    """``/close`` or the Close button: the user closes one of their own tickets."""
    if ticket.user_id != author.telegram_id:
        raise NotYourTicketError(f"ticket {ticket.pk} is not {author.telegram_id}'s")
    try:
        entry, _ = services.ticket_close(
            ticket_id=ticket.pk, by_user=True, author=author, origin=origin
        )
    except TicketClosedError as exc:
        return Answer(exc.user_message)
    delivery.deliver(entry)
    return None


def _no_open_ticket(incoming: Incoming) -> Answer:
    lines = [gettext("You have no open support ticket. Send /support <your question> to open one.")]
    closed = selectors.recently_closed_ticket(incoming.user_id)
    if closed is not None:
        lines.append(
            ngettext(
                "To reopen ticket #%(number)s, reply to one of its messages "
                "(possible for %(count)d day after closing).",
                "To reopen ticket #%(number)s, reply to one of its messages "
                "(possible for %(count)d days after closing).",
                reopen_window().days,
            )
            % {"number": closed.number, "count": reopen_window().days}
        )
    if incoming.is_admin:
        lines.append(
            gettext("To answer a ticket, reply to its notification or press its Reply button.")
        )
    return Answer("\n".join(lines))


# --- support side ----------------------------------------------------------------------------
def admin_reply(
    *, ticket_id: int, author: Author, origin: Origin, content: Content
) -> tuple[TicketMessage, Delivery]:
    """An answer from support (Telegram or the admin site), sent to the user."""
    entry, _ = services.ticket_reply(
        ticket_id=ticket_id, author=author, origin=origin, content=check_answer(content)
    )
    return entry, delivery.deliver(entry)


def resolve(*, ticket_id: int, author: Author, origin: Origin) -> tuple[TicketMessage, Delivery]:
    """Support closes the ticket; the user is told."""
    entry, _ = services.ticket_close(
        ticket_id=ticket_id, by_user=False, author=author, origin=origin
    )
    return entry, delivery.deliver(entry)


def reopen(*, ticket_id: int, author: Author, origin: Origin) -> tuple[TicketMessage, Delivery]:
    """Support reopens a closed ticket (any time); the user is told."""
    entry, _ = services.ticket_reopen(ticket_id=ticket_id, author=author, origin=origin)
    return entry, delivery.deliver(entry)


def retry_delivery(entry: TicketMessage) -> Delivery:
    """An admin's "Retry delivery": send the user an entry whose delivery failed, or whose
    outcome is uncertain (the admin decided it did not arrive). Never while another attempt
    is sending it: the claim in ``delivery`` lets only one of them send."""
    services.entry_delivery_retry(entry=entry)
    entry.refresh_from_db()
    return delivery.deliver(entry)


def settle_stale_deliveries(ticket: Ticket) -> None:
    """Before showing a ticket: a send whose process died (past its deadline, no result) is
    marked uncertain, so that the admin can decide with Retry delivery."""
    delivery.settle_stale(ticket)


def delivery_report(ticket: Ticket, result: Delivery) -> str:
    """What the admin who answered is told."""
    if result.in_progress:
        return gettext("The message to the user of ticket #%(number)s is being sent right now.") % {
            "number": ticket.number
        }
    if result.uncertain:
        return gettext(
            "Delivery to the user of ticket #%(number)s is uncertain: %(error)s. "
            "It may have arrived, so it is not sent again automatically: check with the "
            "user, and use Retry delivery on the ticket in the admin site if it did not "
            "arrive."
        ) % {"number": ticket.number, "error": result.error}
    if result.delivered is False and result.retrying:
        return gettext(
            "Not delivered to the user of ticket #%(number)s yet: %(error)s. "
            "It is retried automatically."
        ) % {"number": ticket.number, "error": result.error}
    if result.delivered is False:
        return gettext(
            "Not delivered to the user of ticket #%(number)s: %(error)s. It is saved in the ticket."
        ) % {"number": ticket.number, "error": result.error}
    return gettext("Sent to the user of ticket #%(number)s.") % {"number": ticket.number}
