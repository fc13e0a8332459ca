"""Messages to every admin, each delivery isolated from the others.

One admin who blocked the bot (or any failure sending to one admin) never stops the others.
Failures are recorded in ``DeliveryFailure``; a chat that answered a permanent error is marked
``BlockedChat`` and skipped until that user writes to the bot again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from telegram_bot.admins import admin_ids
from telegram_bot.bot import get_client
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.models import BlockedChat, DeliveryFailure
from telegram_bot.redaction import redact

log = logging.getLogger(__name__)


@dataclass
class NotifyReport:
    sent: dict[int, dict[str, Any]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)


def notify_admins(
    text: str,
    *,
    purpose: str,
    reply_markup: dict[str, Any] | None = None,
    client: TelegramClient | None = None,
) -> NotifyReport:
    """Send ``text`` to every admin; return who got it, who did not and who was skipped."""
    client = client or get_client()
    report = NotifyReport()
    recipients = admin_ids()
    blocked = set(
        BlockedChat.objects.filter(chat_id__in=recipients).values_list("chat_id", flat=True)
    )
    for admin_id in recipients:
        if admin_id in blocked:
            report.skipped.append(admin_id)
            continue
        try:
            report.sent[admin_id] = client.send_message(
                chat_id=admin_id, text=text, reply_markup=reply_markup
            )
        except Exception as exc:
            report.failed[admin_id] = delivery_failed(admin_id, purpose, exc)
    return report


def delivery_failed(chat_id: int, purpose: str, exc: BaseException) -> str:
    """Record a failed delivery to ``chat_id``; mark the chat blocked on a permanent refusal."""
    description = redact(str(exc))[:500]
    DeliveryFailure.objects.create(
        chat_id=chat_id,
        purpose=purpose[:100],
        error_class=type(exc).__name__,
        description=description,
    )
    if isinstance(exc, TelegramApiError) and exc.chat_unreachable:
        BlockedChat.objects.update_or_create(
            chat_id=chat_id, defaults={"reason": exc.description[:300]}
        )
    log.warning("delivery to %s failed (%s): %s", chat_id, purpose, description)
    return description


def chat_reachable_again(chat_id: int) -> None:
    """The user wrote to the bot: whatever blocked delivery before is gone."""
    BlockedChat.objects.filter(chat_id=chat_id).delete()
