"""Community on the member page (``FeatureConfig.member_sections``): the member's joins and
leaves of the chat, newest first."""

from __future__ import annotations

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from community.models import MemberMovement
from telegram_bot.features import Member, MemberSection

VIEW_PERMISSION = "community.view_membermovement"
SHOWN = 50  # the latest movements shown


def member_section(request: HttpRequest, member: Member) -> MemberSection | None:
    if not request.user.has_perm(VIEW_PERMISSION):
        return None
    movements = list(
        MemberMovement.objects.filter(chat_id=member.chat_id, user_id=member.user_id).order_by(
            "-at", "-id"
        )[:SHOWN]
    )
    html = render_to_string(
        "community/member_section.html", {"movements": movements}, request=request
    )
    return MemberSection("community", _("Joins and leaves"), html)
