"""The core's overview cards: dead letters and failed jobs."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.overview import Card, capped
from telegram_bot.state import get_store

# Dead letters are counted from one page of their index: beyond this the card says "100+".
DEAD_LETTER_CAP = 100


def core_cards(user: Any) -> list[Card]:
    cards = []
    if user.has_perm("telegram_bot.manage_dead_letters"):
        # Keys only, one page of the dlq: index (see telegram_bot.state.keys.INDEXED_FAMILIES).
        keys, _cursor = get_store().scan("dlq:", None, DEAD_LETTER_CAP + 1)
        count = min(len(keys), DEAD_LETTER_CAP)
        cards.append(
            Card(
                key="dead-letters",
                order=80,
                title=_("Messages the bot could not handle"),
                value=capped(count, len(keys) > DEAD_LETTER_CAP),
                detail=_("kept to be handled again or dropped") if count else _("none"),
                url=reverse("admin:dead-letters"),
                alert=count > 0,
            )
        )
    if user.has_perm("telegram_bot.view_job"):
        failed = Job.objects.filter(status=JobStatus.FAILED).count()
        cards.append(
            Card(
                key="failed-jobs",
                order=90,
                title=_("Failed tasks"),
                value=f"{failed:,}",
                detail=_("gave up after several tries") if failed else _("none"),
                url=reverse("admin:telegram_bot_job_changelist") + "?status__exact=failed",
                alert=failed > 0,
            )
        )
    return cards
