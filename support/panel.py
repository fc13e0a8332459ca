"""The support screens of the in-Telegram panel: open tickets (newest first, paginated) and one
ticket with Reply / Resolve."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from support import selectors
from support.assignees import assignee_names
from support.delivery import clip
from support.models import Ticket, TicketMessage

LAST_ENTRIES = 5


def list_view(page: int) -> tuple[str, dict[str, Any]]:
    found = selectors.open_tickets_page(page)
    rows: list[list[dict[str, str]]] = []
    if found.total == 0:
        text = _("Open support tickets: none.")
    else:
        text = _("Open support tickets: %(total)s, newest first (page %(page)s of %(pages)s)") % {
            "total": found.total,
            "page": found.number,
            "pages": found.pages,
        }
    for ticket in found.tickets:
        label = clip(
            f"#{ticket.number} · {ticket.user_name or ticket.user_id} · {ticket.subject}", 60
        )
        rows.append([{"text": label, "callback_data": f"sup:view:{ticket.pk}:{found.number}"}])
    navigation = []
    if found.number > 1:
        navigation.append({"text": _("« Newer"), "callback_data": f"sup:list:{found.number - 1}"})
    if found.number < found.pages:
        navigation.append({"text": _("Older »"), "callback_data": f"sup:list:{found.number + 1}"})
    if navigation:
        rows.append(navigation)
    rows.append([{"text": _("Back"), "callback_data": "panel:home"}])
    return text, {"inline_keyboard": rows}


def ticket_view(ticket: Ticket, page: int) -> tuple[str, dict[str, Any]]:
    lines = [
        _("Ticket #%(number)s (%(status)s) from %(who)s (id %(id)s)")
        % {
            "number": ticket.number,
            "status": ticket.get_status_display(),
            "who": ticket.user_name or _("user"),
            "id": ticket.user_id,
        },
        _("Opened %(when)s UTC") % {"when": f"{ticket.created_at:%Y-%m-%d %H:%M}"}
        + (
            _(", assigned to %(who)s") % {"who": assignee_names([ticket.assignee])[ticket.assignee]}
            if ticket.assignee
            else ""
        ),
        "",
    ]
    for entry in selectors.last_entries(ticket, LAST_ENTRIES):
        lines.append(f"{_who(entry)}: {clip(_summary(entry), 400)}")
    rows = []
    if ticket.is_open:
        rows.append(
            [
                {"text": _("Reply"), "callback_data": f"sup:reply:{ticket.pk}"},
                {"text": _("Resolve"), "callback_data": f"sup:resolve:{ticket.pk}:{page}"},
            ]
        )
    rows.append([{"text": _("Back to the list"), "callback_data": f"sup:list:{page}"}])
    return clip("\n".join(lines)), {"inline_keyboard": rows}


def _who(entry: TicketMessage) -> str:
    if entry.sender == TicketMessage.Sender.USER:
        return _("User")
    if entry.sender == TicketMessage.Sender.ADMIN:
        if entry.author_name:
            return _("Support (%(name)s)") % {"name": entry.author_name}
        return _("Support")
    return _("System")


def _summary(entry: TicketMessage) -> str:
    if entry.kind == TicketMessage.Kind.EVENT:
        return f"[{entry.get_event_display()}]"
    if entry.kind == TicketMessage.Kind.TEXT:
        return entry.text
    return f"[{entry.kind}] {entry.text}".strip()
