"""The join requests waiting for a decision, in the web console: the list the bot's /panel
shows in Telegram, each request with Approve and Decline that go through the same decision as
the buttons there (``join_request_decide``: the first decision wins, whoever made it, and it
is audited)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from community import auditing
from community.records import APPROVE, DECLINE, STAGE_QUESTION, Decider, JoinRequestStore
from community.services import join_decisions
from telegram_bot.audit import audit_step
from telegram_bot.audit.admin import admin_actor
from telegram_bot.state import get_store

VIEW_PERMISSION = "community.view_chatpolicy"
DECIDE_PERMISSION = "community.change_chatpolicy"
# The page shows this many, oldest first; a backlog beyond it is said, not listed.
PAGE = 200


@require_GET
def join_request_list(request: HttpRequest) -> HttpResponse:
    pending = sorted(
        (record for record in JoinRequestStore(get_store()).all() if record.pending),
        key=lambda record: record.requested_at,
    )
    rows = [
        {
            "token": record.token,
            "chat": record.chat_title or str(record.chat_id),
            "chat_id": record.chat_id,
            "who": record.user_name,
            "summary": record.summary,
            "since": datetime.fromtimestamp(record.requested_at, tz=UTC),
            "answering": record.stage == STAGE_QUESTION,
        }
        for record in pending[:PAGE]
    ]
    context = {
        **admin.site.each_context(request),
        "title": _("Join requests"),
        "rows": rows,
        "more": max(0, len(pending) - PAGE),
        "can_decide": request.user.has_perm(DECIDE_PERMISSION),
    }
    return render(request, "community/join_requests.html", context)


@require_POST
def join_request_decide_view(request: HttpRequest, token: str) -> HttpResponse:
    if not request.user.has_perm(DECIDE_PERMISSION):
        raise PermissionDenied
    action = request.POST.get("action", "")
    if action not in (APPROVE, DECLINE):
        return HttpResponseBadRequest(_("Unknown decision."), content_type="text/plain")
    decider = Decider(None, _("%(name)s (web console)") % {"name": request.user.get_username()})
    with audit_step(f"join_request.{action}", actor=admin_actor(request), source="admin") as step:
        result = join_decisions.join_request_decide(token=token, action=action, decider=decider)
        auditing.note_decision(step, result)
    (messages.success if result.ok else messages.error)(request, result.message)
    return redirect("admin:community-join-requests")
