"""Errors of the support desk; ``user_message`` is the short answer shown in Telegram or on the
admin site."""

from __future__ import annotations

from telegram_bot.errors import AuthorizationError, ValidationError


class TicketNotFoundError(ValidationError):
    code = "ticket_not_found"
    user_message = "This ticket does not exist."


class NotYourTicketError(AuthorizationError):
    code = "not_your_ticket"
    user_message = "This is not your ticket."


class TicketClosedError(ValidationError):
    code = "ticket_closed"


class TicketOpenError(ValidationError):
    code = "ticket_open"
