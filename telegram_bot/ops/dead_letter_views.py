"""Admin pages for the dead-letter queue: list, replay through the whole pipeline, drop."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from telegram_bot.audit import audit_step
from telegram_bot.audit.admin import admin_actor
from telegram_bot.errors import StateError
from telegram_bot.pipeline.process import Outcome, dead_letters, process_update
from telegram_bot.redaction import redact
from telegram_bot.state import InvalidKeyError, InvalidValueError

PAGE_SIZE = 50
PERMISSION = "telegram_bot.manage_dead_letters"


def _allowed(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Staff is checked by the admin site; this asks for the dead-letter permission too."""

    @wraps(view)
    def check(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return check


@_allowed
@require_http_methods(["GET"])
def dead_letter_list(request: HttpRequest) -> HttpResponse:
    cursor = request.GET.get("cursor") or None
    try:
        letters, next_cursor = dead_letters().page(cursor, PAGE_SIZE)
    except (InvalidValueError, InvalidKeyError):
        # Not a cursor this page ever gave out (outside dlq:, malformed): refused, never
        # followed into another key family.
        return HttpResponseBadRequest(_("That page link is not valid."), content_type="text/plain")
    except StateError:
        messages.error(request, _("That page link is not valid any more; showing the first page."))
        letters, next_cursor = dead_letters().page(None, PAGE_SIZE)
    rows = [
        {
            "update_id": letter.update_id,
            "update_type": letter.update_type,
            "error_class": letter.error_class,
            "error": letter.error,
            "failed_at": datetime.fromtimestamp(letter.failed_at_ms / 1000, tz=UTC),
            "payload": redact(json.dumps(letter.update, indent=2, ensure_ascii=False)),
        }
        for letter in letters
    ]
    context = {
        "title": _("Dead letters"),
        "rows": rows,
        "next_cursor": next_cursor,
        "has_permission": True,
        "site_header": admin.site.site_header,
        "site_title": admin.site.site_title,
    }
    return render(request, "admin/dead_letters.html", context)


def _update_id(update_id: int) -> int:
    """An update id of the URL: an update's (64 bits), else a 404 (a key of 400 digits was a
    server error in the store's key check)."""
    if not 0 <= update_id < 2**63:
        raise Http404
    return update_id


@_allowed
@require_POST
def dead_letter_replay(request: HttpRequest, update_id: int) -> HttpResponse:
    update_id = _update_id(update_id)
    letter = dead_letters().get(update_id)
    if letter is None:
        messages.error(
            request,
            _("Dead letter %(id)s is gone (replayed, dropped or expired).") % {"id": update_id},
        )
        return _back()
    with _audited(request, "dead_letter.replay", update_id) as step:
        outcome = process_update(letter.update, replay=True)
        if outcome == Outcome.PROCESSED:
            dead_letters().drop(update_id)
            messages.success(
                request,
                _("Update %(id)s replayed: %(outcome)s.")
                % {"id": update_id, "outcome": outcome.value},
            )
        elif outcome == Outcome.DEAD_LETTER:
            again = dead_letters().get(update_id)
            error = again.error_class if again else _("an error")
            step.failed(f"failed again with {error}")
            messages.error(
                request,
                _("Update %(id)s failed again with %(error)s; it stays here.")
                % {"id": update_id, "error": error},
            )
        else:
            # Ignored (chat no longer allowed, no route), refused, in progress, unavailable:
            # the update was not handled, so the letter stays for the operator to decide.
            step.refused(f"not handled ({outcome.value})")
            messages.error(
                request,
                _("Update %(id)s was not handled (%(outcome)s); it stays here.")
                % {"id": update_id, "outcome": outcome.value},
            )
    return _back()


@_allowed
@require_POST
def dead_letter_drop(request: HttpRequest, update_id: int) -> HttpResponse:
    update_id = _update_id(update_id)
    with _audited(request, "dead_letter.drop", update_id):
        dead_letters().drop(update_id)
    messages.success(request, _("Dead letter %(id)s dropped.") % {"id": update_id})
    return _back()


def _audited(request: HttpRequest, action: str, update_id: int) -> Any:
    # Not keyed by update id: that id belongs to the update replayed, not to this action.
    return audit_step(
        action,
        actor=admin_actor(request),
        source="admin",
        target_name=f"dead letter of update {update_id}",
    )


def _back() -> HttpResponse:
    return HttpResponseRedirect(reverse("admin:dead-letters"))
