from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class SupportConfig(features.FeatureConfig):
    name = "support"
    verbose_name = gettext_lazy("Support")
    bot_handlers = "support.handlers"
    job_handlers = "support.tasks.JOB_HANDLERS"
    schedules = "support.schedules.SCHEDULES"
    overview_cards = "support.overview.support_cards"
    start_line = gettext_lazy("support")
    privacy = "support.privacy"
    member_sections = "support.member.member_section"
    console_sections = {"desk": ("support.ticket", "support.cannedreply")}
    audit_phrases = {
        "ticket.reply": gettext_lazy("{actor} answered {target}"),
        "ticket.resolve": gettext_lazy("{actor} resolved {target}"),
        "ticket.reopen": gettext_lazy("{actor} reopened {target}"),
        "ticket.retry_delivery": gettext_lazy("{actor} sent an answer in {target} again"),
        "ticket.assign": gettext_lazy("{actor} assigned {target}"),
        "ticket.priority": gettext_lazy("{actor} changed the priority of {target}"),
    }
