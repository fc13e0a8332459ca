"""Support tickets: the ticket, its conversation, the bot messages that point at it, numbering.

Only what a user chose to send to support is stored (the ticket's conversation), never other
chat history. Rows created by a Telegram update carry its ``update_id`` under a unique
constraint, so a re-delivered update finds its row instead of creating a second one.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.validators import MaxLengthValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class TicketCounter(models.Model):
    """The last ticket number given out per bot. Taken with ``select_for_update`` inside the
    transaction that creates the ticket, so numbers are gapless and never repeat."""

    bot_id = models.BigIntegerField(_("bot id"), primary_key=True)
    last_number = models.PositiveIntegerField(_("last number"), default=0)

    class Meta:
        verbose_name = _("ticket counter")
        verbose_name_plural = _("ticket counters")

    def __str__(self) -> str:
        return f"bot {self.bot_id}: #{self.last_number}"


class Ticket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", pgettext_lazy("ticket", "open")
        CLOSED = "closed", pgettext_lazy("ticket", "closed")

    class ClosedBy(models.TextChoices):
        USER = "user", _("the user")
        ADMIN = "admin", pgettext_lazy("who", "support")

    class Priority(models.TextChoices):
        LOW = "low", pgettext_lazy("priority", "low")
        NORMAL = "normal", pgettext_lazy("priority", "normal")
        HIGH = "high", pgettext_lazy("priority", "high")

    class Rating(models.TextChoices):
        GOOD = "good", pgettext_lazy("rating", "good")
        BAD = "bad", pgettext_lazy("rating", "bad")

    bot_id = models.BigIntegerField(_("bot id"))
    number = models.PositiveIntegerField(_("number"))
    user_id = models.BigIntegerField(
        _("user id"), help_text=_("The Telegram user who opened the ticket.")
    )
    chat_id = models.BigIntegerField(_("chat id"), help_text=_("The private chat with that user."))
    user_name = models.CharField(_("user name"), max_length=200, blank=True)
    subject = models.CharField(
        _("subject"), max_length=120, blank=True, help_text=_("Start of the first message.")
    )
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.OPEN
    )
    assignee = models.CharField(
        _("assignee"),
        max_length=150,
        blank=True,
        help_text=_("Who answered first: tg:<Telegram id> or site:<username>."),
    )
    opened_update_id = models.BigIntegerField(_("opening update id"), unique=True)
    created_at = models.DateTimeField(_("opened"), default=timezone.now, db_index=True)
    first_response_at = models.DateTimeField(_("first response"), null=True, blank=True)
    closed_at = models.DateTimeField(_("closed at"), null=True, blank=True)
    closed_by = models.CharField(
        _("closed by"), max_length=10, choices=ClosedBy.choices, blank=True
    )
    reopened_count = models.PositiveIntegerField(_("times reopened"), default=0)
    priority = models.CharField(
        _("priority"), max_length=10, choices=Priority.choices, default=Priority.NORMAL
    )
    # The ticket's topic in the staff group (SUPPORT_STAFF_CHAT_ID), once created.
    topic_chat_id = models.BigIntegerField(_("staff group"), null=True, blank=True)
    topic_id = models.BigIntegerField(_("topic id"), null=True, blank=True)
    # Set once the staff group refused the ticket's topic (no forum, no rights): from then on
    # the ticket uses the private-chat flow; setting it claims the owner's one notice.
    topic_failed_at = models.DateTimeField(_("topic failed"), null=True, blank=True)
    # Since when the user waits for an answer (their message after the last answer); the
    # reminder goes once per wait (``reminded_at`` set by a conditional UPDATE).
    waiting_since = models.DateTimeField(_("waiting since"), null=True, blank=True)
    reminded_at = models.DateTimeField(_("reminded at"), null=True, blank=True)
    rating = models.CharField(_("rating"), max_length=10, choices=Rating.choices, blank=True)
    rated_at = models.DateTimeField(_("rated at"), null=True, blank=True)

    class Meta:
        verbose_name = _("ticket")
        verbose_name_plural = _("tickets")
        ordering = ["-created_at", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["bot_id", "number"], name="support_ticket_number_per_bot"
            )
        ]
        indexes = [
            models.Index(fields=["user_id", "status"], name="support_ticket_user_status"),
            models.Index(fields=["topic_chat_id", "topic_id"], name="support_ticket_topic"),
        ]

    def __str__(self) -> str:
        return f"#{self.number}"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def first_response_time(self) -> timedelta | None:
        if self.first_response_at is None:
            return None
        return self.first_response_at - self.created_at

    @property
    def resolution_time(self) -> timedelta | None:
        if self.closed_at is None:
            return None
        return self.closed_at - self.created_at


class TicketMessage(models.Model):
    """One entry of a ticket's conversation: a user message, an answer, or a status event.

    Delivery bookkeeping makes re-runs of the same update resume instead of repeat:
    ``user_notified_at`` is set once the user's chat got the bot message for this entry (the
    confirmation of a user message, the answer itself, the notice of an event),
    ``admins_notified_at`` once the admins were notified, ``delivery_error`` when the user
    could not be reached (the bot was blocked, for example).

    Sending to the user is claimed first (``delivery_attempt_token``, with the
    ``delivery_attempt_deadline`` after which an attempt that never came back is presumed
    dead), so two senders of one entry (the support.deliver job, the admin site's Retry
    button, a re-delivered update) never both send it. ``delivery_uncertain`` marks a send whose
    outcome is unknown (a read timeout, a dropped connection, a proxy's gateway error, an
    attempt that died): it may have reached the user, so it is never sent again automatically;
    an admin decides with "Retry delivery".
    """

    class Sender(models.TextChoices):
        USER = "user", _("user")
        ADMIN = "admin", pgettext_lazy("who", "support")
        SYSTEM = "system", _("system")

    class Kind(models.TextChoices):
        TEXT = "text", _("text")
        PHOTO = "photo", _("photo")
        DOCUMENT = "document", _("document")
        VOICE = "voice", _("voice")
        VIDEO_NOTE = "video_note", _("video note")
        VIDEO = "video", _("video")
        STICKER = "sticker", _("sticker")
        EVENT = "event", _("event")

    class Event(models.TextChoices):
        CLOSED_BY_USER = "closed_by_user", _("closed by the user")
        RESOLVED = "resolved", _("resolved by support")
        REOPENED_BY_USER = "reopened_by_user", _("reopened by the user")
        REOPENED_BY_ADMIN = "reopened_by_admin", _("reopened by support")

    ticket = models.ForeignKey(
        Ticket, on_delete=models.CASCADE, related_name="messages", verbose_name=_("ticket")
    )
    sender = models.CharField(_("sender"), max_length=10, choices=Sender.choices)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    event = models.CharField(_("event"), max_length=20, choices=Event.choices, blank=True)
    text = models.TextField(
        _("text"), blank=True, help_text=_("The text, or the caption of a file.")
    )
    file_id = models.CharField(_("file id"), max_length=255, blank=True)
    file_name = models.CharField(_("file name"), max_length=255, blank=True)
    author_id = models.BigIntegerField(_("author id"), null=True, blank=True)
    author_name = models.CharField(_("author name"), max_length=200, blank=True)
    update_id = models.BigIntegerField(_("update id"), unique=True, null=True, blank=True)
    form_token = models.UUIDField(_("form token"), unique=True, null=True, blank=True)
    source_chat_id = models.BigIntegerField(_("source chat id"), null=True, blank=True)
    source_message_id = models.BigIntegerField(_("source message id"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    user_notified_at = models.DateTimeField(_("user notified"), null=True, blank=True)
    admins_notified_at = models.DateTimeField(_("admins notified"), null=True, blank=True)
    # The admins' notice is claimed before it is sent: a run that finds it claimed and not
    # recorded does not send it again (another run is sending it, or one stopped in between).
    admins_notice_claimed_at = models.DateTimeField(
        _("admins' notice claimed"), null=True, blank=True
    )
    delivery_error = models.CharField(_("delivery error"), max_length=500, blank=True)
    delivery_attempt_token = models.UUIDField(_("delivery attempt token"), null=True, blank=True)
    delivery_attempt_deadline = models.DateTimeField(
        _("delivery attempt deadline"), null=True, blank=True
    )
    delivery_uncertain = models.BooleanField(_("delivery uncertain"), default=False)
    # A staff note: written in the ticket's topic with the note prefix (or a command); never
    # sent to the user.
    internal = models.BooleanField(_("staff note"), default=False)
    media_group_id = models.CharField(_("album"), max_length=64, blank=True)
    file_size = models.BigIntegerField(_("file size"), null=True, blank=True)

    class Meta:
        verbose_name = _("ticket message")
        verbose_name_plural = _("ticket messages")
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["source_chat_id", "source_message_id"], name="support_msg_source")
        ]

    def __str__(self) -> str:
        return f"#{self.ticket.number} {self.sender} {self.kind}"

    @property
    def delivery_state(self) -> str:
        """For entries sent to the user: delivered, uncertain (it may have arrived), not
        delivered, sending (an attempt is in flight), or pending."""
        if self.user_notified_at is not None:
            return "delivered"
        if self.delivery_uncertain:
            return "uncertain"
        if self.delivery_error:
            return "not delivered"
        if self.delivery_attempt_token is not None:
            return "sending"
        return "pending"

    @property
    def delivery_state_label(self) -> str:
        """``delivery_state`` in the active language, for the admin site."""
        return str(DELIVERY_STATE_LABELS[self.delivery_state])


DELIVERY_STATE_LABELS = {
    "delivered": pgettext_lazy("delivery", "delivered"),
    "uncertain": pgettext_lazy("delivery", "uncertain (it may have arrived)"),
    "not delivered": pgettext_lazy("delivery", "not delivered"),
    "sending": pgettext_lazy("delivery", "sending"),
    "pending": pgettext_lazy("delivery", "pending"),
}


class TicketBotMessage(models.Model):
    """A message the bot sent about a ticket: replying to it addresses that ticket.

    ``audience`` says whose chat it is in: an admin's (notifications, the Reply prompt) or the
    user's (confirmations, answers, notices).
    """

    class Audience(models.TextChoices):
        ADMIN = "admin", _("admin")
        USER = "user", _("user")

    chat_id = models.BigIntegerField(_("chat id"))
    message_id = models.BigIntegerField(_("message id"))
    audience = models.CharField(_("audience"), max_length=10, choices=Audience.choices)
    ticket = models.ForeignKey(
        Ticket, on_delete=models.CASCADE, related_name="bot_messages", verbose_name=_("ticket")
    )
    entry = models.ForeignKey(
        TicketMessage,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="bot_messages",
        verbose_name=_("entry"),
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        verbose_name = _("bot message of a ticket")
        verbose_name_plural = _("bot messages of tickets")
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "message_id"], name="support_bot_message_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.chat_id}/{self.message_id} -> #{self.ticket.number}"


class CannedReply(models.Model):
    """A saved answer: ``/canned <name>`` in a ticket's topic sends it to the ticket's user,
    ``{first_name}`` and ``{ticket}`` filled in."""

    name = models.SlugField(
        _("name"), max_length=32, unique=True, help_text=_("Short name: /canned <name>.")
    )
    text = models.TextField(
        _("text"),
        validators=[MaxLengthValidator(3900)],
        help_text=_("Placeholders: {first_name} (the user's), {ticket} (#12)."),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("canned reply")
        verbose_name_plural = _("canned replies")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
