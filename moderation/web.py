"""Moderation on the member page (``FeatureConfig.member_sections``): the member's warnings
with their reasons, and the actions an admin may take from there (warn, mute for an hour, ban,
unban). Each action goes through the services the bot's commands use: a warning is given at
once (audited, the chat's limit applies), the others are queued as ``moderation.act`` jobs that
call Telegram and record the outcome; the operator is the actor of each."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from moderation.durations import describe
from moderation.models import Warning, WarnState
from moderation.services import Origin, Target, penalize_queued, warn_and_queue
from telegram_bot.audit import clean
from telegram_bot.audit.admin import admin_actor
from telegram_bot.features import Member, MemberSection
from telegram_bot.numbers import ascii_int

VIEW_PERMISSION = "moderation.view_warning"
ACT_PERMISSION = "moderation.change_warning"
MUTE_SECONDS = 3600
# The console's actions: how long each lasts (None: for ever, or not a penalty).
ACTIONS: dict[str, int | None] = {"warn": None, "mute": MUTE_SECONDS, "ban": None, "unban": None}
SHOWN = 50  # the latest warnings shown


def member_section(request: HttpRequest, member: Member) -> MemberSection | None:
    """The member's warnings (with the view permission) and the action buttons (with the
    change permission)."""
    can_view = request.user.has_perm(VIEW_PERMISSION)
    can_act = request.user.has_perm(ACT_PERMISSION)
    if not (can_view or can_act):
        return None
    warnings = (
        list(Warning.objects.filter(chat_id=member.chat_id, user_id=member.user_id)[:SHOWN])
        if can_view
        else []
    )
    context = {
        "member": member,
        "can_view": can_view,
        "can_act": can_act,
        "warnings": warnings,
        "mute_for": describe(MUTE_SECONDS),
        "action_url": reverse(
            "admin:moderation-member-action", args=[member.chat_id, member.user_id]
        ),
        "back": request.get_full_path(),
    }
    html = render_to_string("moderation/member_section.html", context, request=request)
    return MemberSection("moderation", _("Warnings and moderation"), html)


@require_POST
def member_action_view(request: HttpRequest, chat_id: str, user_id: str) -> HttpResponse:
    if not request.user.has_perm(ACT_PERMISSION):
        raise PermissionDenied
    chat, user = ascii_int(chat_id, signed=True), ascii_int(user_id)
    action = request.POST.get("action", "")
    if chat is None or user is None or action not in ACTIONS:
        return HttpResponseBadRequest(_("Unknown action."), content_type="text/plain")
    target = _target(chat, user, request.POST.get("name", ""))
    origin = Origin(chat, admin_actor(request), "admin")
    reason = clean(request.POST.get("reason", "").strip(), 300)
    if action == "warn":
        result = warn_and_queue(origin=origin, target=target, reason=reason)
        text = _("%(name)s is warned (%(count)s/%(limit)s).") % {
            "name": target.label,
            "count": result.count,
            "limit": result.limit,
        }
        if result.triggered:
            text += " " + _("The limit is reached: the chat's action is on its way.")
    else:
        penalize_queued(
            origin=origin, action=action, target=target, seconds=ACTIONS[action], reason=reason
        )
        text = _(
            "Sent to Telegram: the audit log shows the outcome in a moment (%(action)s %(name)s)."
        ) % {"action": _action_label(action), "name": target.label}
    messages.success(request, text)
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        return redirect(back)
    return redirect("admin:index")


def _target(chat_id: int, user_id: int, posted_name: str) -> Target:
    """The member as the warnings know them, else the name the page showed."""
    state = WarnState.objects.filter(chat_id=chat_id, user_id=user_id).first()
    if state is not None and (state.name or state.username):
        return Target(user_id, state.name, state.username)
    return Target(user_id, clean(posted_name.strip(), 200))


def _action_label(action: str) -> str:
    return {"mute": _("mute"), "ban": _("ban"), "unban": _("unban")}[action]
