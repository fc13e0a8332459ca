"""Models of the telegram_bot app."""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from telegram_bot import languages
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.state.models import KVEntry

__all__ = [
    "BlockedChat",
    "BotAdmin",
    "ChatPreference",
    "DeliveryFailure",
    "Job",
    "JobStatus",
    "KVEntry",
]


class BotAdmin(models.Model):
    """An admin added at run time (admin site or panel). The owner and ADMIN_TELEGRAM_IDS come
    from the environment and are admins without a row; see ``telegram_bot.admins``."""

    telegram_id = models.BigIntegerField(
        _("Telegram id"),
        unique=True,
        validators=[MinValueValidator(1)],
        help_text=_("The Telegram user id."),
    )
    display_name = models.CharField(_("display name"), max_length=200, blank=True)
    added_by = models.BigIntegerField(_("added by"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("bot admin")
        verbose_name_plural = _("bot admins")
        ordering = ["telegram_id"]

    def __str__(self) -> str:
        return f"{self.display_name or 'admin'} ({self.telegram_id})"


def validate_time_zone(value: str) -> None:
    if value and value not in zoneinfo.available_timezones():
        raise ValidationError(
            _("%(value)s is not a time zone name (e.g. Europe/Moscow)."),
            params={"value": value},
        )


def validate_language(value: str) -> None:
    if value and value not in {code for code, _name in settings.LANGUAGES}:
        raise ValidationError(
            _("%(value)s is not one of the site's languages."), params={"value": value}
        )


class ChatPreference(models.Model):
    """A chat's time zone and language, read by every app (the statistics' days and hours, the
    overview's "today", the language the bot answers in when the user's is unknown). A chat
    without a row, or a blank field, uses the ``TIME_ZONE`` / ``LANGUAGE_CODE`` setting."""

    chat_id = models.BigIntegerField(_("chat id"), primary_key=True)
    time_zone = models.CharField(
        _("time zone"),
        max_length=64,
        blank=True,
        validators=[validate_time_zone],
        help_text=_("An IANA time zone name, e.g. Europe/Moscow. Blank: the TIME_ZONE setting."),
    )
    language = models.CharField(
        _("language"),
        max_length=16,
        blank=True,
        validators=[validate_language],
        help_text=_("Blank: the LANGUAGE_CODE setting."),
    )

    class Meta:
        verbose_name = _("chat preference")
        verbose_name_plural = _("chat preferences")

    def __str__(self) -> str:
        return str(self.chat_id)

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        languages.forget_chat(self.chat_id)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        result = super().delete(*args, **kwargs)
        languages.forget_chat(self.chat_id)
        return result


def chat_zone(chat_id: int) -> zoneinfo.ZoneInfo:
    """The chat's time zone (its preference, else the ``TIME_ZONE`` setting)."""
    name = (
        ChatPreference.objects.filter(chat_id=chat_id).values_list("time_zone", flat=True).first()
    )
    return zoneinfo.ZoneInfo(name or settings.TIME_ZONE)


class BlockedChat(models.Model):
    """A chat that answered a permanent error (bot blocked, chat not found): skipped by
    notifications until the user writes to the bot again."""

    chat_id = models.BigIntegerField(_("chat id"), primary_key=True)
    reason = models.CharField(_("reason"), max_length=300)
    blocked_at = models.DateTimeField(_("blocked"), auto_now=True)

    class Meta:
        verbose_name = _("blocked chat")
        verbose_name_plural = _("blocked chats")

    def __str__(self) -> str:
        return f"{self.chat_id}: {self.reason}"


class DeliveryFailure(models.Model):
    """A message to an admin (or another chat) that could not be delivered."""

    chat_id = models.BigIntegerField(_("chat id"), db_index=True)
    purpose = models.CharField(_("purpose"), max_length=100)
    error_class = models.CharField(_("error class"), max_length=100)
    description = models.CharField(_("description"), max_length=500)
    created_at = models.DateTimeField(_("created"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("delivery failure")
        verbose_name_plural = _("delivery failures")
        ordering = ["-created_at"]
        # Dead letters live in the KV store, not in a table; their permission lives here.
        permissions = [
            ("manage_dead_letters", "Can see, replay and drop dead letters"),
            # The privacy pages (telegram_bot/privacy/views.py) are not a model's either.
            ("export_personal_data", "Can export everything held about a Telegram user"),
            ("erase_personal_data", "Can erase everything held about a Telegram user"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} -> {self.chat_id}: {self.error_class}"


class AuditEntry(models.Model):
    """One action of an admin or moderator: who, where, what, on whom, why, when, outcome.

    Written through ``telegram_bot.audit.audit_record`` only. An action taken for a Telegram
    update is unique on (update id, action, cause): a re-delivered update records nothing twice,
    and the automatic actions one message can bring about (the flood limit's mute, the warning
    limit's) are told apart by their ``cause``.
    The log is append-only in the admin site (no add, change or delete).
    """

    chat_title: str = ""  # not a column: the audit log's page sets it (telegram_bot.audit.admin)

    class Outcome(models.TextChoices):
        DONE = "done", _("done")
        REFUSED = "refused", _("refused")
        FAILED = "failed", _("failed")

    created_at = models.DateTimeField(_("time"), auto_now_add=True, db_index=True)
    actor_id = models.BigIntegerField(_("actor id"), null=True, blank=True, db_index=True)
    actor_name = models.CharField(_("actor name"), max_length=200, blank=True)
    source = models.CharField(
        _("source"), max_length=20, help_text=_("command, button, panel, admin, auto")
    )
    chat_id = models.BigIntegerField(_("chat id"), null=True, blank=True, db_index=True)
    action = models.CharField(_("action"), max_length=40, db_index=True)
    target_id = models.BigIntegerField(_("target id"), null=True, blank=True, db_index=True)
    target_name = models.CharField(_("target name"), max_length=200, blank=True)
    reason = models.CharField(_("reason"), max_length=500, blank=True)
    outcome = models.CharField(
        _("outcome"), max_length=10, choices=Outcome.choices, default=Outcome.DONE
    )
    detail = models.CharField(_("detail"), max_length=500, blank=True)
    update_id = models.BigIntegerField(_("update id"), null=True, blank=True)
    cause = models.CharField(
        _("cause"),
        max_length=20,
        blank=True,
        default="",
        help_text=_("what brought an automatic action about: flood, violation, warn_limit"),
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit log")
        permissions = [("export_auditentry", "Can export the audit log as CSV")]
        constraints = [
            models.UniqueConstraint(
                fields=["update_id", "action", "cause"],
                condition=models.Q(update_id__isnull=False),
                name="audit_once_per_update_action_cause",
            )
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_id} on {self.target_id} in {self.chat_id}"
