"""Admin-site pages of a ticket: the whole conversation, the reply form, resolve and reopen.

Replies are sent through the Telegram client from here (no update, so no ``Context``); a form
token under a unique constraint makes a double submission send one answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from support import assignees, delivery, selectors, services, topic
from support.auditing import admin_site_step, note_delivery
from support.conf import MAX_TEXT_LENGTH, reopen_window
from support.delivery import Delivery
from support.models import CannedReply, Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import check_text
from telegram_bot.errors import BotError
from telegram_bot.privacy import ANONYMOUS_BASE


def ticket_detail(
    request: HttpRequest, ticket: Ticket, admin_context: dict[str, Any]
) -> HttpResponse:
    delivery.settle_stale(ticket)
    entries = selectors.conversation(ticket)
    context = {
        **admin_context,
        "title": gettext("Ticket #%(number)s") % {"number": ticket.number},
        "ticket": ticket,
        "assignee": _assignee(ticket),
        "entries": entries,
        "first_response": format_duration(ticket.first_response_time),
        "resolution": format_duration(ticket.resolution_time),
        "form_tokens": [uuid.uuid4() for _ in range(3)],  # reply, resolve, reopen
        "max_length": MAX_TEXT_LENGTH,
        "reopen_days": reopen_window().days,
        "erased": ticket.chat_id >= ANONYMOUS_BASE,  # nothing can be sent: no Retry
        # Saved answers, filled in for this ticket, each sent by its own reply form.
        "canned": [
            (reply.name, topic.render_canned(reply.text, ticket), uuid.uuid4())
            for reply in CannedReply.objects.order_by("name")[:50]
        ],
    }
    return render(request, "support/ticket_detail.html", context)


@require_POST
def ticket_reply_view(request: HttpRequest, ticket: Ticket) -> HttpResponse:
    def reply(origin: Origin) -> Any:
        content = check_text(request.POST.get("text", ""))
        return services.admin_reply(
            ticket_id=ticket.pk, author=_author(request), origin=origin, content=content
        )

    return _act(
        request,
        ticket,
        "ticket.reply",
        reply,
        gettext("Reply sent to the user of ticket #%(number)s.") % {"number": ticket.number},
    )


@require_POST
def ticket_resolve_view(request: HttpRequest, ticket: Ticket) -> HttpResponse:
    def resolve(origin: Origin) -> Any:
        return services.resolve(ticket_id=ticket.pk, author=_author(request), origin=origin)

    return _act(
        request,
        ticket,
        "ticket.resolve",
        resolve,
        gettext("Ticket #%(number)s resolved; the user was told.") % {"number": ticket.number},
    )


@require_POST
def ticket_reopen_view(request: HttpRequest, ticket: Ticket) -> HttpResponse:
    def reopen(origin: Origin) -> Any:
        return services.reopen(ticket_id=ticket.pk, author=_author(request), origin=origin)

    return _act(
        request,
        ticket,
        "ticket.reopen",
        reopen,
        gettext("Ticket #%(number)s reopened; the user was told.") % {"number": ticket.number},
    )


def _act(
    request: HttpRequest,
    ticket: Ticket,
    name: str,
    action: Callable[[Origin], Any],
    done: str,
) -> HttpResponse:
    """Run one form action of the ticket page (its form token makes a double submit count
    once), record it in the audit log, then report the outcome and go back to the ticket."""
    try:
        with admin_site_step(request, ticket, name) as step:
            _, result = action(Origin(form_token=_form_token(request)))
            note_delivery(step, result)
    except BotError as exc:
        messages.error(request, exc.user_message)
        return _back(ticket)
    _report(request, result, done)
    return _back(ticket)


@require_POST
def entry_retry_view(request: HttpRequest, ticket: Ticket, entry_id: int) -> HttpResponse:
    entry = (
        TicketMessage.objects.filter(pk=entry_id, ticket=ticket).select_related("ticket").first()
    )
    if entry is None:
        raise Http404("no such entry")
    if entry.user_notified_at is not None:
        messages.info(request, gettext("This message was delivered already."))
        return _back(ticket)
    if ticket.chat_id >= ANONYMOUS_BASE:
        messages.error(request, gettext("Its user's data was erased: nothing can be sent."))
        return _back(ticket)
    with admin_site_step(request, ticket, "ticket.retry_delivery") as step:
        result = delivery.retry(entry)
        note_delivery(step, result)
    if result.delivered is None and not result.in_progress:
        # Nothing sent by this attempt: delivered by another one, or given up by it.
        entry.refresh_from_db()
        if entry.user_notified_at is None:
            messages.warning(request, gettext("Nothing was sent: reload the ticket to see why."))
            return _back(ticket)
    _report(request, result, gettext("Delivered to the user."))
    return _back(ticket)


def _assignee(ticket: Ticket) -> str:
    """The assignee's name: annotated by the admin's queryset, else looked up."""
    if not ticket.assignee:
        return ""
    name = getattr(ticket, "assignee_name", None)
    return name or assignees.assignee_names([ticket.assignee])[ticket.assignee]


def format_duration(value: timedelta | None) -> str:
    """``2d 3h``, ``3h 5m``, ``5m 10s``; a dash for none."""
    if value is None:
        return "—"
    seconds = max(0, int(value.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"


def require_change(request: HttpRequest, allowed: bool) -> None:
    if not allowed:
        raise PermissionDenied


def _report(request: HttpRequest, result: Delivery, success: str) -> None:
    if result.in_progress:
        messages.info(
            request,
            gettext("This message is being sent to the user right now; reload in a minute."),
        )
    elif result.uncertain:
        messages.warning(
            request,
            gettext(
                "Delivery uncertain: %(error)s. It may have reached the user, so it is not "
                "sent again automatically: check with the user, and press Retry delivery if it "
                "did not arrive."
            )
            % {"error": result.error},
        )
    elif result.delivered is False and result.retrying:
        messages.warning(
            request,
            gettext("Not delivered to the user yet: %(error)s. It is retried automatically.")
            % {"error": result.error},
        )
    elif result.delivered is False:
        messages.error(
            request,
            gettext("Not delivered to the user: %(error)s. It is saved in the ticket.")
            % {"error": result.error},
        )
    else:
        messages.success(request, success)


def _author(request: HttpRequest) -> Author:
    return Author(name=request.user.get_username())


def _form_token(request: HttpRequest) -> uuid.UUID:
    try:
        return uuid.UUID(request.POST.get("form_token", ""))
    except ValueError:
        # No (valid) token, e.g. a hand-made request: still unique, just not deduplicated.
        return uuid.uuid4()


def _back(ticket: Ticket) -> HttpResponse:
    return HttpResponseRedirect(reverse("admin:support_ticket_change", args=[ticket.pk]))
