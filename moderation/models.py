"""Per-chat moderation settings and the warnings given to members."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

MIN_SECONDS, MAX_SECONDS = 30, 366 * 24 * 3600  # Telegram's range for until_date


class Action(models.TextChoices):
    NONE = "none", "nothing"
    DELETE = "delete", "delete the message"
    WARN = "warn", "warn"
    MUTE = "mute", "mute"
    BAN = "ban", "ban"
    KICK = "kick", "kick"


_PENALTIES = [(a.value, a.label) for a in (Action.MUTE, Action.BAN, Action.KICK)]
_FLOOD = [(a.value, a.label) for a in (Action.NONE, Action.MUTE, Action.BAN, Action.KICK)]
_VIOLATION = [
    (a.value, a.label) for a in (Action.NONE, Action.DELETE, Action.WARN, Action.MUTE, Action.BAN)
]


def _seconds(default: int, help_text: str) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        default=default,
        validators=[MinValueValidator(MIN_SECONDS), MaxValueValidator(MAX_SECONDS)],
        help_text=f"{help_text} (seconds, 30 to 31622400).",
    )


class ChatSettings(models.Model):
    """How one chat is moderated. A chat without a row uses the defaults below, which are
    safe: nothing automatic is destructive except the anti-flood mute."""

    chat_id = models.BigIntegerField(unique=True)
    title = models.CharField(max_length=200, blank=True)
    warn_limit = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(20)],
        help_text="Warnings that trigger the automatic action (1-20).",
    )
    warn_action = models.CharField(max_length=10, choices=_PENALTIES, default=Action.MUTE)
    warn_action_seconds = _seconds(24 * 3600, "How long the warning action lasts")
    warn_expiry_days = models.PositiveSmallIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(365)],
        help_text="A warning stops counting after this many days (1-365).",
    )
    flood_action = models.CharField(max_length=10, choices=_FLOOD, default=Action.MUTE)
    flood_messages = models.PositiveSmallIntegerField(
        default=8,
        validators=[MinValueValidator(2), MaxValueValidator(100)],
        help_text="More than this many messages from one member ... (2-100)",
    )
    flood_seconds = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(2), MaxValueValidator(300)],
        help_text="... within this many seconds is flooding (2-300).",
    )
    flood_action_seconds = _seconds(600, "How long the anti-flood mute or ban lasts")
    violation_low = models.CharField(max_length=10, choices=_VIOLATION, default=Action.NONE)
    violation_medium = models.CharField(max_length=10, choices=_VIOLATION, default=Action.NONE)
    violation_high = models.CharField(max_length=10, choices=_VIOLATION, default=Action.NONE)
    violation_action_seconds = _seconds(3600, "How long a violation's mute or ban lasts")
    log_chat_id = models.BigIntegerField(
        null=True,
        blank=True,
        validators=[MaxValueValidator(-1)],
        help_text="Optional: a channel or group (its negative id) where every audit-log entry "
        "of this chat (moderation, join requests, ...) is also posted. The bot must be able to "
        "post there.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "chat moderation settings"
        verbose_name_plural = "chat moderation settings"
        ordering = ["chat_id"]

    def __str__(self) -> str:
        return f"{self.title or 'chat'} ({self.chat_id})"

    def violation_action(self, severity: str) -> str:
        return str(getattr(self, f"violation_{severity}", Action.NONE))


class WarnState(models.Model):
    """One row per warned member of a chat: the row locked while a warning is counted, so
    that two moderators warning at once at the limit trigger the action once."""

    chat_id = models.BigIntegerField()
    user_id = models.BigIntegerField()
    username = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="warnstate_one_per_member")
        ]

    def __str__(self) -> str:
        return f"{self.name or self.user_id} in {self.chat_id}"


class Warning(models.Model):
    """A warning. It counts until ``expires_at`` unless revoked (/unwarn) or spent (it was
    one of those that reached the limit and triggered the action)."""

    chat_id = models.BigIntegerField()
    user_id = models.BigIntegerField()
    moderator_id = models.BigIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked = models.BooleanField(default=False)
    spent = models.BooleanField(default=False)
    triggered = models.BooleanField(
        default=False, help_text="This warning reached the limit and triggered the action."
    )
    update_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["chat_id", "user_id", "expires_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["update_id"],
                condition=models.Q(update_id__isnull=False),
                name="warning_once_per_update",
            )
        ]

    def __str__(self) -> str:
        return f"warning of {self.user_id} in {self.chat_id}"
