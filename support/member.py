"""Support on the member page (``FeatureConfig.member_sections``): the tickets the member
opened (tickets are the bot's private chats, so every ticket of the person, whatever chat the
page is about)."""

from __future__ import annotations

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from support.models import Ticket
from telegram_bot.features import Member, MemberSection

VIEW_PERMISSION = "support.view_ticket"
SHOWN = 50  # the latest tickets shown


def member_section(request: HttpRequest, member: Member) -> MemberSection | None:
    if not request.user.has_perm(VIEW_PERMISSION):
        return None
    tickets = list(Ticket.objects.filter(user_id=member.user_id)[:SHOWN])
    html = render_to_string("support/member_section.html", {"tickets": tickets}, request=request)
    return MemberSection("support", _("Tickets"), html)
