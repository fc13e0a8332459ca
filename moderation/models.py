"""Per-chat moderation settings and the warnings given to members."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

MIN_SECONDS, MAX_SECONDS = 30, 366 * 24 * 3600  # Telegram's range for until_date


class Action(models.TextChoices):
    NONE = "none", _("nothing")
    DELETE = "delete", _("delete the message")
    WARN = "warn", _("warn")
    MUTE = "mute", _("mute")
    BAN = "ban", _("ban")
    KICK = "kick", _("kick")


_PENALTIES = [(a.value, a.label) for a in (Action.MUTE, Action.BAN, Action.KICK)]
_FLOOD = [(a.value, a.label) for a in (Action.NONE, Action.MUTE, Action.BAN, Action.KICK)]
_VIOLATION = [
    (a.value, a.label) for a in (Action.NONE, Action.DELETE, Action.WARN, Action.MUTE, Action.BAN)
]


def _seconds(
    verbose_name: StrOrPromise, default: int, help_text: StrOrPromise
) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        verbose_name,
        default=default,
        validators=[MinValueValidator(MIN_SECONDS), MaxValueValidator(MAX_SECONDS)],
        help_text=format_lazy(
            _("{what} (seconds, {least} to {most})."),
            what=help_text,
            least=MIN_SECONDS,
            most=MAX_SECONDS,
        ),
    )


class ChatSettings(models.Model):
    """How one chat is moderated. A chat without a row uses the defaults below, which are
    safe: nothing automatic is destructive except the anti-flood mute."""

    chat_id = models.BigIntegerField(_("chat id"), unique=True)
    title = models.CharField(_("title"), max_length=200, blank=True)
    warn_limit = models.PositiveSmallIntegerField(
        _("warning limit"),
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(20)],
        help_text=_("Warnings that trigger the automatic action (1-20)."),
    )
    warn_action = models.CharField(
        _("action at the limit"), max_length=10, choices=_PENALTIES, default=Action.MUTE
    )
    warn_action_seconds = _seconds(
        _("duration of the action at the limit"), 24 * 3600, _("How long the warning action lasts")
    )
    warn_expiry_days = models.PositiveSmallIntegerField(
        _("warnings expire after (days)"),
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(365)],
        help_text=_("A warning stops counting after this many days (1-365)."),
    )
    flood_action = models.CharField(
        _("anti-flood action"), max_length=10, choices=_FLOOD, default=Action.MUTE
    )
    flood_messages = models.PositiveSmallIntegerField(
        _("flood messages"),
        default=8,
        validators=[MinValueValidator(2), MaxValueValidator(100)],
        help_text=_("More than this many messages from one member ... (2-100)"),
    )
    flood_seconds = models.PositiveSmallIntegerField(
        _("flood seconds"),
        default=10,
        validators=[MinValueValidator(2), MaxValueValidator(300)],
        help_text=_("... within this many seconds is flooding (2-300)."),
    )
    flood_action_seconds = _seconds(
        _("anti-flood action duration"), 600, _("How long the anti-flood mute or ban lasts")
    )
    violation_low = models.CharField(
        _("low violation action"), max_length=10, choices=_VIOLATION, default=Action.NONE
    )
    violation_medium = models.CharField(
        _("medium violation action"), max_length=10, choices=_VIOLATION, default=Action.NONE
    )
    violation_high = models.CharField(
        _("high violation action"), max_length=10, choices=_VIOLATION, default=Action.NONE
    )
    violation_action_seconds = _seconds(
        _("violation action duration"), 3600, _("How long a violation's mute or ban lasts")
    )
    log_chat_id = models.BigIntegerField(
        _("log chat id"),
        null=True,
        blank=True,
        validators=[MaxValueValidator(-1)],
        help_text=_(
            "Optional: a channel or group (its negative id) where every audit-log entry "
            "of this chat (moderation, join requests, ...) is also posted. The bot must be able "
            "to post there."
        ),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("chat moderation settings")
        verbose_name_plural = _("chat moderation settings")
        ordering = ["chat_id"]

    def __str__(self) -> str:
        return f"{self.title or 'chat'} ({self.chat_id})"

    def violation_action(self, severity: str) -> str:
        return str(getattr(self, f"violation_{severity}", Action.NONE))


class WarnState(models.Model):
    """One row per warned member of a chat: the row locked while a warning is counted, so
    that two moderators warning at once at the limit trigger the action once."""

    chat_id = models.BigIntegerField(_("chat id"))
    user_id = models.BigIntegerField(_("user id"))
    username = models.CharField(_("username"), max_length=64, blank=True)
    name = models.CharField(_("name"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("warned member")
        verbose_name_plural = _("warned members")
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="warnstate_one_per_member")
        ]

    def __str__(self) -> str:
        return f"{self.name or self.user_id} in {self.chat_id}"


class Warning(models.Model):
    """A warning. It counts until ``expires_at`` unless revoked (/unwarn) or spent (it was
    one of those that reached the limit and triggered the action)."""

    chat_id = models.BigIntegerField(_("chat id"))
    user_id = models.BigIntegerField(_("user id"))
    moderator_id = models.BigIntegerField(_("moderator id"), null=True, blank=True)
    reason = models.CharField(_("reason"), max_length=300, blank=True)
    created_at = models.DateTimeField(_("given"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"))
    revoked = models.BooleanField(_("revoked"), default=False)
    spent = models.BooleanField(_("spent"), default=False)
    triggered = models.BooleanField(
        _("triggered the action"),
        default=False,
        help_text=_("This warning reached the limit and triggered the action."),
    )
    update_id = models.BigIntegerField(_("update id"), null=True, blank=True)

    class Meta:
        verbose_name = _("warning")
        verbose_name_plural = _("warnings")
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


class Connection(models.Model):
    """An admin's private chat with the bot connected to one of their groups (``/connect``):
    their moderation and rules commands sent in private apply to that group, their rights
    there checked at each command."""

    user_id = models.BigIntegerField(_("user id"), unique=True)
    chat_id = models.BigIntegerField(_("chat id"))
    chat_title = models.CharField(_("chat"), max_length=200, blank=True)
    connected_at = models.DateTimeField(_("connected"), auto_now=True)

    class Meta:
        verbose_name = _("connection")
        verbose_name_plural = _("connections")

    def __str__(self) -> str:
        return f"{self.user_id} -> {self.chat_id}"
