"""Support settings: the one place the app reads them. Their defaults and validation live in
``config/settings.py`` (from the environment); tests override them with pytest-django's
``settings`` fixture, which these functions read at call time."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

MAX_TEXT_LENGTH = 4000
PANEL_PAGE_SIZE = 5


def open_workflow_ttl_ms() -> int:
    """How long ``/support`` waits for the one message that opens the ticket."""
    return settings.SUPPORT_OPEN_TTL_SECONDS * 1000


def reply_workflow_ttl_ms() -> int:
    """How long the Reply button waits for the admin's answer."""
    return settings.SUPPORT_REPLY_TTL_SECONDS * 1000


def reopen_window() -> timedelta:
    """How long after closing a user may reopen a ticket by replying."""
    return timedelta(days=settings.SUPPORT_REOPEN_DAYS)
