"""What the admins are told about posts (every admin, each delivery isolated)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot.notifications import notify_admins

log = logging.getLogger(__name__)

UNKNOWN_OUTCOME = gettext_lazy(
    "An attempt to publish this post ended without Telegram's answer: it may or may not be in "
    "the channel. Check the channel, then mark the post published or publish it again."
)


def unknown_text(post_id: int) -> str:
    return _("Post #%(id)s: %(problem)s") % {"id": post_id, "problem": UNKNOWN_OUTCOME}


def notify(post_id: int, text: str | Callable[[], str]) -> None:
    """Tell every admin (a function as ``text`` is written in each admin's language); a failure
    to tell is logged, never raised (what was recorded stays)."""
    try:
        notify_admins(text, purpose="content_post")
    except Exception:
        log.exception("could not notify admins about post %s", post_id)
