"""Errors of the support desk; ``user_message`` is the short answer shown in Telegram or on the
admin site."""

from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot.errors import AuthorizationError, BotError, ValidationError


class TicketNotFoundError(ValidationError):
    code = "ticket_not_found"
    user_message = gettext_lazy("This ticket does not exist.")


class NotYourTicketError(AuthorizationError):
    code = "not_your_ticket"
    user_message = gettext_lazy("This is not your ticket.")


class TicketClosedError(ValidationError):
    code = "ticket_closed"


class TicketOpenError(ValidationError):
    code = "ticket_open"


class DeliveryInProgressError(BotError):
    """Another attempt is sending this message right now; come back after its deadline."""

    retryable = True
    code = "delivery_in_progress"

    def __init__(self, message: str = "", *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = float(retry_after)
