"""A group upgraded to a supergroup: Telegram gives it a new id (``migrate_to_chat_id`` in the
old group's last message, ``migrate_from_chat_id`` in the new one's first), and every setting
kept under the old id would silently stop applying.

Each app names its models of one row per chat (``FeatureConfig.chat_settings_models``); their
rows move to the new id, in one transaction, unless the supergroup already has its own (set
after the upgrade, or moved by the other of the two messages: either may come first, and a
re-delivery moves nothing). History (statistics, warnings, the audit log) stays under the old
id, as it happened. The move is recorded in the audit log.
"""

from __future__ import annotations

import logging

from django.apps import apps
from django.conf import settings
from django.db import transaction

from telegram_bot import languages
from telegram_bot.audit import Actor, audit_record
from telegram_bot.features import feature_configs

log = logging.getLogger(__name__)
ACTION = "chat.migrate"
TELEGRAM = Actor(None, "Telegram (group upgraded to a supergroup)")


def migrate_chat(old_id: int, new_id: int, *, update_id: int | None = None) -> dict[str, int]:
    """Move the per-chat settings of group ``old_id`` to supergroup ``new_id``; what moved
    (model label: rows). Idempotent."""
    if old_id == new_id:
        return {}
    moved: dict[str, int] = {}
    with transaction.atomic():
        for config in feature_configs():
            for label in config.chat_settings_models:
                model = apps.get_model(label)
                if model.objects.filter(chat_id=new_id).exists():
                    continue
                count = model.objects.filter(chat_id=old_id).update(chat_id=new_id)
                if count:
                    moved[label] = count
        if moved:
            audit_record(
                action=ACTION,
                actor=TELEGRAM,
                source="auto",
                chat_id=new_id,
                detail=f"from {old_id}: " + ", ".join(sorted(moved)),
                update_id=update_id,
            )
    if moved:
        log.info("chat %s became supergroup %s: moved %s", old_id, new_id, moved)
        # QuerySet.update sends no signal: this process's cached language of either id goes
        # now (the others' within CHAT_CACHE_SECONDS).
        languages.forget_chat(old_id)
        languages.forget_chat(new_id)
    allowed = settings.ALLOWED_CHAT_IDS
    if allowed and new_id not in allowed:
        log.warning(
            "chat %s became supergroup %s, which ALLOWED_CHAT_IDS does not list: "
            "its updates are refused until it is added",
            old_id,
            new_id,
        )
    return moved
