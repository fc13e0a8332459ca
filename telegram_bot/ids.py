"""Telegram user ids and message ids: the one check every feature uses on them.

What the Bot API says (``api.json``): a user id "has at most 52 significant bits", so a user id
is a whole number from 1 to ``USER_ID_MAX`` (2**52 - 1; the erasure's anonymous ids start
above it). A message id is "unique inside this chat" and positive in every update (0 marks only
a message the server scheduled instead of sending, in the answer to a send). Telegram's service
accounts have ordinary ids but are nobody: GroupAnonymousBot (an anonymous admin writing as the
group), Channel_Bot (someone writing as a channel) and Telegram (777000: service notices and a
linked channel's automatic forwards). Each speaks for many people or for Telegram, so none is a
person: no admin, no ticket, no erasure, no moderation target.

The typed Update (``telegram_bot.updates``) holds these ranges with ``UserId`` and
``MessageId``; commands, forms and buttons read ids from text with ``parse_user_id`` /
``parse_person_id`` / ``parse_message_id``; services check ints with ``is_person`` /
``check_person``.
"""

from __future__ import annotations

from typing import Annotated

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy
from pydantic import Field, StrictInt

USER_ID_MAX = 2**52 - 1
MESSAGE_ID_MAX = 2**52 - 1  # the Bot API's bound for every large integer it documents

GROUP_ANONYMOUS_BOT_ID = 1087968824
CHANNEL_BOT_ID = 136817688
TELEGRAM_SERVICE_ID = 777000
SERVICE_ACCOUNT_IDS = frozenset({GROUP_ANONYMOUS_BOT_ID, CHANNEL_BOT_ID, TELEGRAM_SERVICE_ID})

UserId = Annotated[StrictInt, Field(ge=1, le=USER_ID_MAX)]
MessageId = Annotated[StrictInt, Field(ge=1, le=MESSAGE_ID_MAX)]

NOT_A_USER_ID = gettext_lazy(
    "A Telegram user id is a positive whole number up to 4503599627370495 (for example 123456789)."
)
NOT_A_PERSON = gettext_lazy(
    "This id is Telegram's stand-in for anonymous admins, channels or its service account, "
    "not a person."
)
NOT_A_MESSAGE_ID = gettext_lazy("A message id is a positive whole number.")


class IdError(ValueError):
    """Text or a number that is not the id asked for; ``user_message`` may be shown."""

    def __init__(self, user_message: str | Promise) -> None:
        super().__init__(str(user_message))
        self.user_message = user_message


def is_user_id(value: object) -> bool:
    """A Telegram user id: an int (not a bool) from 1 to ``USER_ID_MAX``."""
    return type(value) is int and 1 <= value <= USER_ID_MAX


def is_person(value: object) -> bool:
    """A user id that is not one of Telegram's service accounts."""
    return is_user_id(value) and value not in SERVICE_ACCOUNT_IDS


def is_message_id(value: object) -> bool:
    return type(value) is int and 1 <= value <= MESSAGE_ID_MAX


def check_person(value: object) -> int:
    """``value`` when it is a person's user id, else ``IdError`` saying why."""
    if not is_user_id(value):
        raise IdError(NOT_A_USER_ID)
    if not is_person(value):
        raise IdError(NOT_A_PERSON)
    return value  # type: ignore[return-value]  # is_user_id checked the type


def parse_user_id(text: object) -> int:
    """The user id ``text`` spells (ASCII digits, surrounding spaces allowed); ``IdError``
    for anything else: a sign, other digits ("²", "٣"), zero, more than 52 bits."""
    number = _digits(text, len(str(USER_ID_MAX)))
    if number is None or not is_user_id(number):
        raise IdError(NOT_A_USER_ID)
    return number


def parse_person_id(text: object) -> int:
    """``parse_user_id``, refusing Telegram's service accounts too."""
    return check_person(parse_user_id(text))


def parse_message_id(text: object) -> int:
    number = _digits(text, len(str(MESSAGE_ID_MAX)))
    if number is None or not is_message_id(number):
        raise IdError(NOT_A_MESSAGE_ID)
    return number


def _digits(text: object, most: int) -> int | None:
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses, and "٣", which
    # int() reads as 3. More digits than the bound has cannot be in range.
    body = str(text).strip()
    if not 0 < len(body) <= most or not (body.isascii() and body.isdigit()):
        return None
    return int(body)
