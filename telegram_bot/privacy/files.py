"""The export as one JSON document (the admin page's download and ``manage.py export_user``)."""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder

from telegram_bot.audit import Actor, audit_record
from telegram_bot.privacy import EXPORT_ACTION, export_user


def export_json(user_id: int, *, actor: Actor, source: str) -> str:
    """Everything held about ``user_id`` as indented JSON; the export is audited."""
    document = json.dumps(
        export_user(user_id), cls=DjangoJSONEncoder, ensure_ascii=False, indent=2, sort_keys=True
    )
    audit_record(action=EXPORT_ACTION, actor=actor, source=source, target_id=user_id)
    return document
