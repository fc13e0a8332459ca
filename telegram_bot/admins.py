"""Who is an admin, and changing that without ever locking the operators out.

Admins are the owner (``OWNER_TELEGRAM_ID``, always, not removable), the ids in
``ADMIN_TELEGRAM_IDS`` (changed only in the environment) and the ``BotAdmin`` rows (added and
removed from the admin site or the panel). The list can never become empty: a removal that
would leave no admin is refused.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Mapping
from typing import Any

from cachetools import TTLCache
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext_lazy

from telegram_bot import ids
from telegram_bot.errors import AuthorizationError, ValidationError
from telegram_bot.ids import GROUP_ANONYMOUS_BOT_ID
from telegram_bot.models import BotAdmin
from telegram_bot.updates import Message


def banned_for_longer_than(member: Mapping[str, Any], seconds: float) -> bool:
    """A getChatMember answer: banned (``kicked``) for ever, or until more than ``seconds``
    from now (a kick's or a raid removal's own short ban is not such a ban)."""
    if member.get("status") != "kicked":
        return False
    until = member.get("until_date")
    until = until if isinstance(until, int) and not isinstance(until, bool) else 0
    return not until or until > time.time() + seconds


def sent_as_the_chat(message: Message) -> bool:
    """An anonymous admin's message: GroupAnonymousBot, on behalf of this very chat (only the
    chat's administrators can write so)."""
    user, chat = message.from_user, message.sender_chat
    return (
        user is not None
        and user.id == GROUP_ANONYMOUS_BOT_ID
        and chat is not None
        and chat.id == message.chat.id
    )


# Telegram's stand-ins (``telegram_bot.ids``): an anonymous admin posting as the group, a user
# posting as a channel, and the service account behind a linked channel's automatic forwards.
# Each one speaks for many people, so none of them can be made an admin.
CHANNEL_BOT_ID = ids.CHANNEL_BOT_ID
SERVICE_ACCOUNT_ID = ids.TELEGRAM_SERVICE_ID
STAND_IN_IDS = ids.SERVICE_ACCOUNT_IDS
STAND_IN_REFUSAL = ids.NOT_A_PERSON


class Role(enum.IntEnum):
    USER = 0
    ADMIN = 1
    OWNER = 2


def configured_admin_ids() -> set[int]:
    """Admins that come from the environment (owner included)."""
    ids = set(settings.ADMIN_TELEGRAM_IDS)
    if settings.OWNER_TELEGRAM_ID:
        ids.add(settings.OWNER_TELEGRAM_ID)
    return ids


def admin_ids() -> list[int]:
    """Every admin, owner first."""
    return _owner_first(
        configured_admin_ids() | set(BotAdmin.objects.values_list("telegram_id", flat=True))
    )


def _owner_first(ids: set[int]) -> list[int]:
    owner = settings.OWNER_TELEGRAM_ID
    return sorted(ids, key=lambda user_id: (user_id != owner, user_id))


# The panel's list of admins, shown on every press of its view: kept per process for a few
# seconds, dropped when this process saves or deletes a BotAdmin (another process's change is
# seen within the TTL). Only ever shown: who may do what is decided on fresh reads.
LISTED_ADMINS_SECONDS = 10.0
_LISTED = "rows"


def _clock() -> float:
    return time.monotonic()


_listed: TTLCache[str, frozenset[int]] = TTLCache(1, LISTED_ADMINS_SECONDS, timer=_clock)
_listed_lock = threading.Lock()


def listed_admin_ids() -> list[int]:
    """``admin_ids()`` for display: the BotAdmin rows cached per process
    ``LISTED_ADMINS_SECONDS``."""
    with _listed_lock:
        rows = _listed.get(_LISTED)
    if rows is None:
        rows = frozenset(BotAdmin.objects.values_list("telegram_id", flat=True))
        with _listed_lock:
            _listed[_LISTED] = rows
    return _owner_first(configured_admin_ids() | rows)


def forget_listed_admins(**_signal: object) -> None:
    """Drop the cached list (a BotAdmin row was saved or deleted; a ``post_save`` and
    ``post_delete`` receiver)."""
    with _listed_lock:
        _listed.clear()


def connect_signals() -> None:
    post_save.connect(forget_listed_admins, sender=BotAdmin, dispatch_uid="admins-listed-save")
    post_delete.connect(forget_listed_admins, sender=BotAdmin, dispatch_uid="admins-listed-del")


def is_owner(user_id: int | None) -> bool:
    return user_id is not None and user_id == settings.OWNER_TELEGRAM_ID


def role_of(user_id: int | None) -> Role:
    configured = configured_role(user_id)
    if configured is not None:
        return configured
    if user_id is not None and BotAdmin.objects.filter(telegram_id=user_id).exists():
        return Role.ADMIN
    return Role.USER


def configured_role(user_id: int | None) -> Role | None:
    """The role the environment gives ``user_id`` (owner, ADMIN_TELEGRAM_IDS), without a
    query; None when only the BotAdmin rows can tell."""
    if user_id is None:
        return Role.USER
    if user_id == settings.OWNER_TELEGRAM_ID:
        return Role.OWNER
    if user_id in settings.ADMIN_TELEGRAM_IDS:
        return Role.ADMIN
    return None


def check_admin_configuration() -> list[str]:
    """Problems that would leave the bot without a recovery path; empty when it is fine."""
    if settings.OWNER_TELEGRAM_ID:
        return []
    if settings.TELEGRAM_BOT_TOKEN:
        return ["OWNER_TELEGRAM_ID is not set: nobody could recover the admin list"]
    return []


def admin_add(*, telegram_id: int, added_by: int | None, display_name: str = "") -> BotAdmin:
    """Make ``telegram_id`` an admin (idempotent): a person's Telegram user id only
    (``ids.check_person``: 1..2**52-1, not one of Telegram's stand-in accounts)."""
    try:
        ids.check_person(telegram_id)
    except ids.IdError as exc:
        raise ValidationError(
            f"{telegram_id!r} is not a person's Telegram user id",
            user_message=exc.user_message,
        ) from None
    admin, created = BotAdmin.objects.get_or_create(
        telegram_id=telegram_id,
        defaults={"display_name": display_name[:200], "added_by": added_by},
    )
    if not created and display_name and admin.display_name != display_name[:200]:
        admin.display_name = display_name[:200]
        admin.save(update_fields=["display_name"])
    return admin


@transaction.atomic
def admin_remove(*, telegram_id: int, removed_by: int | None = None) -> None:
    """Remove a run-time admin. Refuses the owner, environment admins and the last admin."""
    if telegram_id == settings.OWNER_TELEGRAM_ID:
        raise AuthorizationError(
            "the owner cannot be removed", user_message=gettext_lazy("The owner cannot be removed.")
        )
    if telegram_id in settings.ADMIN_TELEGRAM_IDS:
        raise AuthorizationError(
            "admin comes from ADMIN_TELEGRAM_IDS",
            user_message=gettext_lazy("This admin is set in ADMIN_TELEGRAM_IDS; change it there."),
        )
    # Lock every row so that two concurrent removals cannot both see "one more admin left".
    rows = list(BotAdmin.objects.select_for_update().order_by("telegram_id"))
    if not any(row.telegram_id == telegram_id for row in rows):
        raise ValidationError(
            f"{telegram_id} is not an admin", user_message=gettext_lazy("Not an admin.")
        )
    remaining = (configured_admin_ids() | {row.telegram_id for row in rows}) - {telegram_id}
    if not remaining:
        raise AuthorizationError(
            "removing the last admin would lock everyone out",
            user_message=gettext_lazy("The last admin cannot be removed."),
        )
    BotAdmin.objects.filter(telegram_id=telegram_id).delete()
