"""Support tickets: the ticket, its conversation, the bot messages that point at it, numbering.

Only what a user chose to send to support is stored (the ticket's conversation), never other
chat history. Rows created by a Telegram update carry its ``update_id`` under a unique
constraint, so a re-delivered update finds its row instead of creating a second one.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone


class TicketCounter(models.Model):
    """The last ticket number given out per bot. Taken with ``select_for_update`` inside the
    transaction that creates the ticket, so numbers are gapless and never repeat."""

    bot_id = models.BigIntegerField(primary_key=True)
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"bot {self.bot_id}: #{self.last_number}"


class Ticket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    class ClosedBy(models.TextChoices):
        USER = "user", "the user"
        ADMIN = "admin", "support"

    bot_id = models.BigIntegerField()
    number = models.PositiveIntegerField()
    user_id = models.BigIntegerField(help_text="The Telegram user who opened the ticket.")
    chat_id = models.BigIntegerField(help_text="The private chat with that user.")
    user_name = models.CharField(max_length=200, blank=True)
    subject = models.CharField(max_length=120, blank=True, help_text="Start of the first message.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    assignee = models.CharField(
        max_length=150,
        blank=True,
        help_text="Who answered first: tg:<Telegram id> or site:<username>.",
    )
    opened_update_id = models.BigIntegerField(unique=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    first_response_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.CharField(max_length=10, choices=ClosedBy.choices, blank=True)
    reopened_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["bot_id", "number"], name="support_ticket_number_per_bot"
            )
        ]
        indexes = [models.Index(fields=["user_id", "status"], name="support_ticket_user_status")]

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
        USER = "user", "user"
        ADMIN = "admin", "support"
        SYSTEM = "system", "system"

    class Kind(models.TextChoices):
        TEXT = "text", "text"
        PHOTO = "photo", "photo"
        DOCUMENT = "document", "document"
        VOICE = "voice", "voice"
        VIDEO_NOTE = "video_note", "video note"
        EVENT = "event", "event"

    class Event(models.TextChoices):
        CLOSED_BY_USER = "closed_by_user", "closed by the user"
        RESOLVED = "resolved", "resolved by support"
        REOPENED_BY_USER = "reopened_by_user", "reopened by the user"
        REOPENED_BY_ADMIN = "reopened_by_admin", "reopened by support"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    sender = models.CharField(max_length=10, choices=Sender.choices)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    event = models.CharField(max_length=20, choices=Event.choices, blank=True)
    text = models.TextField(blank=True, help_text="The text, or the caption of a file.")
    file_id = models.CharField(max_length=255, blank=True)
    file_name = models.CharField(max_length=255, blank=True)
    author_id = models.BigIntegerField(null=True, blank=True)
    author_name = models.CharField(max_length=200, blank=True)
    update_id = models.BigIntegerField(unique=True, null=True, blank=True)
    form_token = models.UUIDField(unique=True, null=True, blank=True)
    source_chat_id = models.BigIntegerField(null=True, blank=True)
    source_message_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    user_notified_at = models.DateTimeField(null=True, blank=True)
    admins_notified_at = models.DateTimeField(null=True, blank=True)
    delivery_error = models.CharField(max_length=500, blank=True)
    delivery_attempt_token = models.UUIDField(null=True, blank=True)
    delivery_attempt_deadline = models.DateTimeField(null=True, blank=True)
    delivery_uncertain = models.BooleanField(default=False)

    class Meta:
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


class TicketBotMessage(models.Model):
    """A message the bot sent about a ticket: replying to it addresses that ticket.

    ``audience`` says whose chat it is in: an admin's (notifications, the Reply prompt) or the
    user's (confirmations, answers, notices).
    """

    class Audience(models.TextChoices):
        ADMIN = "admin", "admin"
        USER = "user", "user"

    chat_id = models.BigIntegerField()
    message_id = models.BigIntegerField()
    audience = models.CharField(max_length=10, choices=Audience.choices)
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="bot_messages")
    entry = models.ForeignKey(
        TicketMessage, on_delete=models.CASCADE, null=True, blank=True, related_name="bot_messages"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "message_id"], name="support_bot_message_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.chat_id}/{self.message_id} -> #{self.ticket.number}"
