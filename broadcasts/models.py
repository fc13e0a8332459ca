"""Subscribers of the bot and broadcasts to them.

A subscriber is a user who started the bot in a private chat and has not blocked it or opted
out (``/stop``). A broadcast is one message to a segment of the subscribers; each recipient is
a row whose send has exactly one recorded outcome (``RecipientStatus``), claimed before the
send and recorded after it, fenced on the claim (``broadcasts.sending``).

Broadcast status moves (``services`` and ``sending`` are the only writers):

- draft     -> scheduled (start: now or at a time, once a preview reached the author)
- scheduled -> sending (its job makes the recipient list), draft (unschedule), cancelled
- sending   -> paused, cancelled, done (every recipient has an outcome)
- paused    -> sending (resume), cancelled
- done, cancelled: final
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class SubscriberStatus(models.TextChoices):
    ACTIVE = "active", _("subscribed")
    STOPPED = "stopped", _("opted out (/stop)")
    BLOCKED = "blocked", _("blocked the bot or gone")


class Subscriber(models.Model):
    user_id = models.BigIntegerField(_("Telegram user id"), primary_key=True)
    first_name = models.CharField(_("first name"), max_length=128, blank=True)
    username = models.CharField(_("username"), max_length=64, blank=True)
    language = models.CharField(_("language"), max_length=16, blank=True, db_index=True)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=SubscriberStatus.choices,
        default=SubscriberStatus.ACTIVE,
        db_index=True,
    )
    # The first /start (a segment's "joined since"), and the last change of status.
    joined_at = models.DateTimeField(
        pgettext_lazy("subscriber", "joined"), default=timezone.now, db_index=True
    )
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        verbose_name = _("subscriber")
        verbose_name_plural = _("subscribers")
        ordering = ["-joined_at"]

    def __str__(self) -> str:
        name = self.first_name or (f"@{self.username}" if self.username else "")
        return f"{name} ({self.user_id})" if name else str(self.user_id)


class ChatMembership(models.Model):
    """A user's membership of one of the bot's chats, from ``chat_member`` updates."""

    chat_id = models.BigIntegerField(_("chat id"))
    user_id = models.BigIntegerField(_("user id"), db_index=True)
    is_member = models.BooleanField(_("member"), default=True)
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        verbose_name = _("chat membership")
        verbose_name_plural = _("chat memberships")
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="broadcasts_member_once")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.chat_id}: {'member' if self.is_member else 'out'}"


class BroadcastStatus(models.TextChoices):
    DRAFT = "draft", _("draft")
    SCHEDULED = "scheduled", _("scheduled")
    SENDING = "sending", pgettext_lazy("broadcast", "sending")
    PAUSED = "paused", _("paused")
    CANCELLED = "cancelled", _("cancelled")
    DONE = "done", _("done")


class ParseMode(models.TextChoices):
    NONE = "", _("plain text")
    HTML = "HTML", _("HTML markup")
    MARKDOWN = "MarkdownV2", _("MarkdownV2 markup")


class MediaKind(models.TextChoices):
    PHOTO = "photo", _("photo")
    VIDEO = "video", _("video")
    DOCUMENT = "document", _("document")


# The Bot API method and its file parameter, per kind.
MEDIA_METHODS = {
    MediaKind.PHOTO: ("sendPhoto", "photo"),
    MediaKind.VIDEO: ("sendVideo", "video"),
    MediaKind.DOCUMENT: ("sendDocument", "document"),
}


class Broadcast(models.Model):
    text = models.TextField(
        _("text"),
        blank=True,
        help_text=_("The message (up to 4096 characters), or the photo's caption (up to 1024)."),
    )
    parse_mode = models.CharField(
        _("formatting"), max_length=16, blank=True, choices=ParseMode.choices, default=""
    )
    photo = models.CharField(
        _("photo, video or document"),
        max_length=2048,
        blank=True,
        help_text=_("Optional: a Telegram file id, or an https:// link to the file."),
    )
    media_kind = models.CharField(
        _("media kind"),
        max_length=16,
        choices=MediaKind.choices,
        default=MediaKind.PHOTO,
        help_text=_("What the file above is: a photo, a video or a document."),
    )
    buttons = models.JSONField(
        _("buttons"), default=list, blank=True, help_text=_('Rows of {"text": label, "url": link}.')
    )
    disable_notification = models.BooleanField(
        _("silent"), default=False, help_text=_("Delivered without a sound.")
    )
    # The segment: every active subscriber matching all of what is set.
    segment_language = models.CharField(
        _("language"), max_length=16, blank=True, help_text=_("Empty: every language.")
    )
    segment_chat_id = models.BigIntegerField(
        _("member of chat"),
        null=True,
        blank=True,
        help_text=_("Only members of this chat of the bot (its id). Empty: everyone."),
    )
    segment_joined_since = models.DateTimeField(
        _("subscribed since"), null=True, blank=True, help_text=_("Empty: any time.")
    )
    send_at = models.DateTimeField(_("send at"), null=True, blank=True)
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=BroadcastStatus.choices,
        default=BroadcastStatus.DRAFT,
        db_index=True,
    )
    preview_chat_id = models.BigIntegerField(
        _("preview to"),
        null=True,
        blank=True,
        help_text=_("Your Telegram user id: the preview is sent there (empty: the owner)."),
    )
    # What the last preview that reached the author showed (a fingerprint of the content):
    # a broadcast starts only once its current content was previewed.
    previewed = models.CharField(_("previewed"), max_length=64, blank=True, editable=False)
    recipients_total = models.PositiveIntegerField(_("recipients"), default=0, editable=False)
    last_error = models.TextField(_("last error"), blank=True, editable=False)
    created_by = models.CharField(_("created by"), max_length=100, blank=True, editable=False)
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    started_at = models.DateTimeField(_("started"), null=True, blank=True, editable=False)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("broadcast")
        verbose_name_plural = _("broadcasts")
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        text = " ".join(self.text.split())
        if not text:
            text = "(photo)" if self.photo else "(empty)"
        return f"#{self.pk} {text if len(text) <= 40 else text[:39] + '…'}"


class RecipientStatus(models.TextChoices):
    PENDING = "pending", _("to send")
    SENDING = "sending", _("being sent")
    SENT = "sent", _("sent")
    BLOCKED = "blocked", _("blocked, deleted or gone")
    FAILED = "failed", _("failed")
    UNKNOWN = "unknown", _("outcome unknown")
    CANCELLED = "cancelled", _("not sent: cancelled")


# Statuses that are an outcome: the recipient is never sent to again.
FINAL = (
    RecipientStatus.SENT,
    RecipientStatus.BLOCKED,
    RecipientStatus.FAILED,
    RecipientStatus.UNKNOWN,
    RecipientStatus.CANCELLED,
)


class BroadcastRecipient(models.Model):
    """One recipient of one broadcast: claimed (``sending`` with a token and a deadline), then
    its outcome, fenced on the token."""

    broadcast = models.ForeignKey(
        Broadcast, on_delete=models.CASCADE, related_name="recipients", verbose_name=_("broadcast")
    )
    user_id = models.BigIntegerField(_("user id"))
    status = models.CharField(
        _("status"), max_length=16, choices=RecipientStatus.choices, default="pending"
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    attempt_token = models.CharField(_("attempt token"), max_length=32, blank=True)
    attempt_deadline = models.DateTimeField(_("attempt deadline"), null=True, blank=True)
    message_id = models.BigIntegerField(_("message id"), null=True, blank=True)
    error = models.CharField(_("error"), max_length=500, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    class Meta:
        verbose_name = _("recipient")
        verbose_name_plural = _("recipients")
        constraints = [
            models.UniqueConstraint(
                fields=["broadcast", "user_id"], name="broadcasts_recipient_once"
            )
        ]
        indexes = [models.Index(fields=["broadcast", "status"], name="broadcasts_recipient_todo")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.status}"
