"""The support screens of the in-Telegram panel: open tickets (newest first, paginated) and one
ticket with Reply / Resolve."""

from __future__ import annotations

from typing import Any

from support import selectors
from support.assignees import assignee_names
from support.delivery import clip
from support.models import Ticket, TicketMessage

LAST_ENTRIES = 5


def list_view(page: int) -> tuple[str, dict[str, Any]]:
    found = selectors.open_tickets_page(page)
    rows: list[list[dict[str, str]]] = []
    if found.total == 0:
        text = "Open support tickets: none."
    else:
        text = (
            f"Open support tickets: {found.total}, newest first "
            f"(page {found.number} of {found.pages})"
        )
    for ticket in found.tickets:
        label = clip(
            f"#{ticket.number} · {ticket.user_name or ticket.user_id} · {ticket.subject}", 60
        )
        rows.append([{"text": label, "callback_data": f"sup:view:{ticket.pk}:{found.number}"}])
    navigation = []
    if found.number > 1:
        navigation.append({"text": "« Newer", "callback_data": f"sup:list:{found.number - 1}"})
    if found.number < found.pages:
        navigation.append({"text": "Older »", "callback_data": f"sup:list:{found.number + 1}"})
    if navigation:
        rows.append(navigation)
    rows.append([{"text": "Back", "callback_data": "panel:home"}])
    return text, {"inline_keyboard": rows}


def ticket_view(ticket: Ticket, page: int) -> tuple[str, dict[str, Any]]:
    lines = [
        f"Ticket #{ticket.number} ({ticket.status}) from {ticket.user_name or 'user'} "
        f"(id {ticket.user_id})",
        f"Opened {ticket.created_at:%Y-%m-%d %H:%M} UTC"
        + (
            f", assigned to {assignee_names([ticket.assignee])[ticket.assignee]}"
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
                {"text": "Reply", "callback_data": f"sup:reply:{ticket.pk}"},
                {"text": "Resolve", "callback_data": f"sup:resolve:{ticket.pk}:{page}"},
            ]
        )
    rows.append([{"text": "Back to the list", "callback_data": f"sup:list:{page}"}])
    return clip("\n".join(lines)), {"inline_keyboard": rows}


def _who(entry: TicketMessage) -> str:
    if entry.sender == TicketMessage.Sender.USER:
        return "User"
    if entry.sender == TicketMessage.Sender.ADMIN:
        return f"Support ({entry.author_name})" if entry.author_name else "Support"
    return "System"


def _summary(entry: TicketMessage) -> str:
    if entry.kind == TicketMessage.Kind.EVENT:
        return f"[{entry.get_event_display()}]"
    if entry.kind == TicketMessage.Kind.TEXT:
        return entry.text
    return f"[{entry.kind}] {entry.text}".strip()
