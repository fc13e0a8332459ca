"""Support settings, with defaults: the lead may expose them as environment variables in
``config/settings.py``; tests override them with pytest-django's ``settings`` fixture."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

MAX_TEXT_LENGTH = 4000
PANEL_PAGE_SIZE = 5


def open_workflow_ttl_ms() -> int:
    """How long ``/support`` waits for the one message that opens the ticket."""
    return int(getattr(settings, "SUPPORT_OPEN_TTL_SECONDS", 600)) * 1000


def reply_workflow_ttl_ms() -> int:
    """How long the Reply button waits for the admin's answer."""
    return int(getattr(settings, "SUPPORT_REPLY_TTL_SECONDS", 900)) * 1000


def reopen_window() -> timedelta:
    """How long after closing a user may reopen a ticket by replying."""
    return timedelta(days=int(getattr(settings, "SUPPORT_REOPEN_DAYS", 7)))
