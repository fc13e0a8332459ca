"""Content settings: the one place the app reads them. Their defaults and validation live in
``config/settings.py`` (from the environment); tests override them with pytest-django's
``settings`` fixture, which these functions read at call time."""

from __future__ import annotations

from django.conf import settings

# Telegram's photo limits (https://core.telegram.org/bots/api#sendphoto); the text and caption
# limits are every sender's: telegram_bot.client.TEXT_LIMIT and CAPTION_LIMIT.
PHOTO_MAX_BYTES = 10 * 1024 * 1024
PHOTO_MAX_SIDES = 10_000  # width + height
PHOTO_MAX_RATIO = 20
# Our own limits on inline URL buttons (Telegram allows up to 8 per row).
MAX_BUTTON_ROWS = 10
MAX_BUTTONS_PER_ROW = 8
BUTTON_LABEL_LIMIT = 64
BUTTON_URL_LIMIT = 2048
# How far ahead a post may be scheduled (catches typos such as 2062).
MAX_SCHEDULE_DAYS = 366
# A job that finds a post not yet due by more than this waits for publish_at again.
DUE_TOLERANCE_SECONDS = 2.0
# A send is not started with less lease left than this: it could not finish in time.
MIN_SEND_SECONDS = 1.0
PANEL_PAGE_SIZE = 5
# At most this many other channels a post is also published in.
MAX_ALSO_TO = 10
# A recurring post's occurrence missed by more than this (no worker ran) is skipped.
RECUR_GRACE_SECONDS = 3600
# A post this long past its time with no job queued or running is reconciled.
RECONCILE_GRACE_SECONDS = 600


def workflow_ttl_ms() -> int:
    """How long a panel conversation (create, schedule, edit) waits for the next message."""
    return settings.CONTENT_WORKFLOW_TTL_SECONDS * 1000


def publish_max_retries() -> int | None:
    """Retries of a publication job (None: the job default, JOB_MAX_RETRIES)."""
    return settings.CONTENT_PUBLISH_MAX_RETRIES
