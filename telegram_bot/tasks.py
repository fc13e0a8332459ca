"""django-q2 entry points of the core. Thin: load what is needed, call the service."""

from __future__ import annotations

import logging

from django.conf import settings

from telegram_bot.state import get_store

log = logging.getLogger(__name__)


def kv_purge_expired() -> int:
    """Delete expired KV rows (database backend; Redis expires keys itself)."""
    deleted = get_store().purge_expired(batch=settings.KV_PURGE_BATCH)
    if deleted:
        log.info("purged %d expired KV entries", deleted)
    return deleted
