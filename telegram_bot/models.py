"""Models of the telegram_bot app."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.state.models import KVEntry

__all__ = ["BlockedChat", "BotAdmin", "DeliveryFailure", "Job", "JobStatus", "KVEntry"]


class BotAdmin(models.Model):
    """An admin added at run time (admin site or panel). The owner and ADMIN_TELEGRAM_IDS come
    from the environment and are admins without a row; see ``telegram_bot.admins``."""

    telegram_id = models.BigIntegerField(
        unique=True, validators=[MinValueValidator(1)], help_text="The Telegram user id."
    )
    display_name = models.CharField(max_length=200, blank=True)
    added_by = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "bot admin"
        ordering = ["telegram_id"]

    def __str__(self) -> str:
        return f"{self.display_name or 'admin'} ({self.telegram_id})"


class BlockedChat(models.Model):
    """A chat that answered a permanent error (bot blocked, chat not found): skipped by
    notifications until the user writes to the bot again."""

    chat_id = models.BigIntegerField(primary_key=True)
    reason = models.CharField(max_length=300)
    blocked_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.chat_id}: {self.reason}"


class DeliveryFailure(models.Model):
    """A message to an admin (or another chat) that could not be delivered."""

    chat_id = models.BigIntegerField(db_index=True)
    purpose = models.CharField(max_length=100)
    error_class = models.CharField(max_length=100)
    description = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        # Dead letters live in the KV store, not in a table; their permission lives here.
        permissions = [("manage_dead_letters", "Can see, replay and drop dead letters")]

    def __str__(self) -> str:
        return f"{self.purpose} -> {self.chat_id}: {self.error_class}"
