"""Telegram Updates as typed values, parsed once at the edge (webhook and ``runbot``).

The models cover every part of an Update the product reads, with the Bot API's types
(``tests/unit/telegram_core/test_update_models.py`` holds them against ``api.json``) and ranges:
ids are int64, dates lie between 1970 and 2100, strings are strings and integers integers (no
coercion from one to the other), booleans are booleans. Fields the product does not read, and
update kinds it does not handle, are allowed and kept (``model_extra``), so a dead letter keeps
the whole update.

Ids hold Telegram's own ranges (``telegram_bot.ids``, the check every feature uses): a user id
is 1..2**52-1 and a message id positive. A private chat's message whose sender is not a person
(out of range, or one of Telegram's service accounts, which never write in a private chat)
comes without its sender, as if it had none: nothing is filed under it (a ticket, a language,
an erasure). A button press or a join request is always a person's: one that is not, is not an
Update.

What a malformed part does: a required part (an Update's ``update_id``, a message's ``chat``, a
callback's ``from``) makes the whole body "not an Update" (``UpdateShapeError``: the webhook
answers 400). An optional part that is malformed (``entities`` that is not a list, a
``reply_to_message`` whose ``message_id`` is a string, a sender whose ``first_name`` is a
number) is dropped: the update is handled without it, and no handler ever sees it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from telegram_bot.ids import MessageId, UserId, is_person

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1
DATE_MAX = 4_102_444_800  # 2100-01-01: anything later is not a date Telegram sends


def _without_nul(text: str) -> str:
    # PostgreSQL cannot store U+0000 in text; Telegram never sends it in names or messages.
    return text.replace("\x00", "") if "\x00" in text else text


Text = Annotated[StrictStr, AfterValidator(_without_nul)]
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[StrictInt, Field(ge=0, le=INT32_MAX)]  # offsets, lengths, durations, sizes
FileSize = Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
UnixTime = Annotated[StrictInt, Field(ge=0, le=DATE_MAX)]  # 0: an inaccessible message

T = TypeVar("T")


def _drop_if_invalid(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


# An optional part: absent, or valid, or (when malformed) dropped to None.
Lenient = Annotated[T | None, WrapValidator(_drop_if_invalid)]


class TelegramObject(BaseModel):
    """A Bot API object: unknown fields are kept, and values never change after parsing."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class User(TelegramObject):
    id: UserId
    is_bot: StrictBool
    first_name: Text
    last_name: Text | None = None
    username: Text | None = None
    language_code: Text | None = None
    is_premium: StrictBool | None = None

    @property
    def full_name(self) -> str:
        return " ".join(part for part in (self.first_name, self.last_name) if part)


def _a_person(user: User) -> User:
    if not is_person(user.id):
        raise ValueError("a person's user id, not one of Telegram's service accounts")
    return user


# Who presses a button or asks to join: always a person.
Person = Annotated[User, AfterValidator(_a_person)]


class Chat(TelegramObject):
    id: Int64
    type: Text
    title: Text | None = None
    username: Text | None = None
    first_name: Text | None = None
    last_name: Text | None = None
    is_forum: StrictBool | None = None


class MessageEntity(TelegramObject):
    type: Text
    offset: Count
    length: Count
    url: Text | None = None
    user: Lenient[User] = None


class PhotoSize(TelegramObject):
    file_id: Text
    file_unique_id: Text
    width: Count
    height: Count
    file_size: FileSize | None = None


class Voice(TelegramObject):
    file_id: Text
    file_unique_id: Text
    duration: Count
    mime_type: Text | None = None
    file_size: FileSize | None = None


class VideoNote(TelegramObject):
    file_id: Text
    file_unique_id: Text
    length: Count
    duration: Count
    file_size: FileSize | None = None


class Document(TelegramObject):
    file_id: Text
    file_unique_id: Text
    file_name: Text | None = None
    mime_type: Text | None = None
    file_size: FileSize | None = None


class InlineKeyboardButton(TelegramObject):
    text: Text
    url: Text | None = None
    callback_data: Text | None = None


class InlineKeyboardMarkup(TelegramObject):
    inline_keyboard: list[list[InlineKeyboardButton]]


# Fields whose presence makes a message a service message (joins, pins, title changes...).
SERVICE_FIELDS = frozenset(
    {
        "new_chat_members",
        "left_chat_member",
        "new_chat_title",
        "new_chat_photo",
        "delete_chat_photo",
        "group_chat_created",
        "supergroup_chat_created",
        "channel_chat_created",
        "migrate_to_chat_id",
        "migrate_from_chat_id",
        "pinned_message",
        "message_auto_delete_timer_changed",
        "forum_topic_created",
        "forum_topic_edited",
        "forum_topic_closed",
        "forum_topic_reopened",
        "general_forum_topic_hidden",
        "general_forum_topic_unhidden",
        "video_chat_scheduled",
        "video_chat_started",
        "video_chat_ended",
        "video_chat_participants_invited",
        "write_access_allowed",
        "proximity_alert_triggered",
        "boost_added",
        "chat_background_set",
        "users_shared",
        "chat_shared",
        "chat_owner_left",
        "chat_owner_changed",
    }
)


class Message(TelegramObject):
    """A message; also an InaccessibleMessage (``date`` 0) under a callback query."""

    message_id: MessageId
    date: UnixTime
    chat: Chat
    message_thread_id: Lenient[Int64] = None
    from_user: Lenient[User] = Field(default=None, alias="from")
    sender_chat: Lenient[Chat] = None
    is_topic_message: Lenient[StrictBool] = None
    reply_to_message: Lenient[Message] = None
    via_bot: Lenient[User] = None
    edit_date: Lenient[UnixTime] = None
    media_group_id: Lenient[Text] = None
    text: Lenient[Text] = None
    entities: Lenient[list[MessageEntity]] = None
    caption: Lenient[Text] = None
    caption_entities: Lenient[list[MessageEntity]] = None
    photo: Lenient[list[PhotoSize]] = None
    document: Lenient[Document] = None
    voice: Lenient[Voice] = None
    video_note: Lenient[VideoNote] = None
    new_chat_members: Lenient[list[User]] = None
    left_chat_member: Lenient[User] = None
    new_chat_title: Lenient[Text] = None
    reply_markup: Lenient[InlineKeyboardMarkup] = None

    @field_validator("from_user")
    @classmethod
    def _private_sender_is_a_person(cls, user: User | None, info: ValidationInfo) -> User | None:
        """In a private chat only the person of the chat writes: a sender that is not one
        (a service account) is dropped, so nothing is filed under it."""
        chat = info.data.get("chat")
        if user is not None and chat is not None and chat.type == "private":
            return user if is_person(user.id) else None
        return user

    @property
    def text_or_caption(self) -> str:
        return self.text or self.caption or ""

    @property
    def is_service(self) -> bool:
        """A join, leave, pin, title change... rather than something a member wrote."""
        # A declared service field that came malformed (dropped to None) still marks the
        # message as one: it claimed to be a join, a pin...
        if not _DECLARED_SERVICE_FIELDS.isdisjoint(self.model_fields_set):
            return True
        extra = self.model_extra
        return extra is not None and not SERVICE_FIELDS.isdisjoint(extra)


# The service fields Message declares are attributes; the others arrive as extras.
_DECLARED_SERVICE_FIELDS = frozenset(SERVICE_FIELDS & Message.model_fields.keys())


class CallbackQuery(TelegramObject):
    id: Text
    from_user: Person = Field(alias="from")
    chat_instance: Text
    message: Lenient[Message] = None
    inline_message_id: Lenient[Text] = None
    data: Lenient[Text] = None


class ChatInviteLink(TelegramObject):
    invite_link: Text
    creator: User
    creates_join_request: StrictBool
    is_primary: StrictBool
    is_revoked: StrictBool
    name: Text | None = None


class ChatJoinRequest(TelegramObject):
    chat: Chat
    from_user: Person = Field(alias="from")
    user_chat_id: UserId
    date: UnixTime
    bio: Lenient[Text] = None
    invite_link: Lenient[ChatInviteLink] = None


class ChatMember(TelegramObject):
    """The union ChatMemberOwner | Administrator | Member | Restricted | Left | Banned, told
    apart by ``status``; a right a status does not carry is None."""

    # creator, administrator, member, restricted, left or kicked; a string, so that a status
    # Telegram adds one day does not make every chat_member update "not an Update".
    status: Text
    user: User
    is_anonymous: StrictBool | None = None
    custom_title: Text | None = None
    is_member: StrictBool | None = None
    until_date: Annotated[StrictInt, Field(ge=0, le=DATE_MAX)] | None = None
    can_be_edited: StrictBool | None = None
    can_manage_chat: StrictBool | None = None
    can_delete_messages: StrictBool | None = None
    can_restrict_members: StrictBool | None = None
    can_promote_members: StrictBool | None = None
    can_change_info: StrictBool | None = None
    can_invite_users: StrictBool | None = None
    can_pin_messages: StrictBool | None = None
    can_send_messages: StrictBool | None = None


class ChatMemberUpdated(TelegramObject):
    chat: Chat
    from_user: User = Field(alias="from")
    date: UnixTime
    old_chat_member: ChatMember
    new_chat_member: ChatMember
    invite_link: Lenient[ChatInviteLink] = None
    via_join_request: Lenient[StrictBool] = None


# The Update kinds read as typed values; any other kind is kept as it came and ignored.
TYPED_KINDS = (
    "message",
    "edited_message",
    "callback_query",
    "chat_join_request",
    "chat_member",
    "my_chat_member",
)
_COMMAND_RE = re.compile(r"^/([A-Za-z0-9_]{1,64})(?:@([A-Za-z0-9_]{3,64}))?(?:\s+(.*))?$", re.S)


class UpdateShapeError(ValueError):
    """The body is not a Telegram Update we can read; the webhook answers 400."""


@dataclass(frozen=True)
class Command:
    name: str
    mention: str | None
    args: str


class Update(TelegramObject):
    update_id: Annotated[StrictInt, Field(ge=0, le=INT64_MAX)]
    message: Message | None = None
    edited_message: Message | None = None
    callback_query: CallbackQuery | None = None
    chat_join_request: ChatJoinRequest | None = None
    chat_member: ChatMemberUpdated | None = None
    my_chat_member: ChatMemberUpdated | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Update:
        if len(self._kinds()) > 1:
            raise ValueError("an Update carries at most one of its optional fields")
        return self

    def _kinds(self) -> list[str]:
        kinds = [kind for kind in TYPED_KINDS if getattr(self, kind) is not None]
        return kinds + list(self.model_extra or {})

    @cached_property
    def type(self) -> str:
        """The kind of update (``message``, ``callback_query``, ...; ``unknown`` for none)."""
        kinds = self._kinds()
        return kinds[0] if kinds else "unknown"

    @property
    def raw(self) -> dict[str, Any]:
        """The update as JSON data (what a dead letter keeps and a replay parses again)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @cached_property
    def effective_message(self) -> Message | None:
        """The message this update carries or refers to (a callback's message included)."""
        if self.message is not None:
            return self.message
        if self.edited_message is not None:
            return self.edited_message
        if self.callback_query is not None:
            return self.callback_query.message
        return None

    @cached_property
    def chat(self) -> Chat | None:
        for part in (self.chat_join_request, self.chat_member, self.my_chat_member):
            if part is not None:
                return part.chat
        message = self.effective_message
        return message.chat if message is not None else None

    @property
    def chat_id(self) -> int | None:
        chat = self.chat
        return chat.id if chat is not None else None

    @property
    def chat_type(self) -> str | None:
        chat = self.chat
        return chat.type if chat is not None else None

    @property
    def user(self) -> User | None:
        """Who sent the update: the message's author, the presser, the requester..."""
        for part in (
            self.callback_query,
            self.chat_join_request,
            self.chat_member,
            self.my_chat_member,
        ):
            if part is not None:
                return part.from_user
        message = self.message or self.edited_message
        return message.from_user if message is not None else None

    @property
    def user_id(self) -> int | None:
        user = self.user
        return user.id if user is not None else None

    @property
    def text(self) -> str:
        message = self.message or self.edited_message
        return message.text_or_caption if message is not None else ""

    @property
    def callback_data(self) -> str:
        query = self.callback_query
        return (query.data or "") if query is not None else ""

    def command(self) -> Command | None:
        """The bot command this message starts with, if any (``/name@bot args``)."""
        if self.message is None or self.message.text is None:
            return None
        match = _COMMAND_RE.match(self.message.text.strip())
        if not match:
            return None
        return Command(name=match[1].lower(), mention=match[2], args=(match[3] or "").strip())


def parse_update(data: Any) -> Update:
    """``data`` (JSON data, as ``getUpdates`` or a dead letter gives it) as an Update."""
    if isinstance(data, Update):
        return data
    if not isinstance(data, dict):
        raise UpdateShapeError("an Update is a JSON object")
    try:
        return Update.model_validate(data)
    except ValidationError as exc:
        raise UpdateShapeError(_first_error(exc)) from None


def parse_update_json(body: bytes) -> Update:
    """The webhook's body as an Update, parsed and validated in one pass."""
    try:
        return Update.model_validate_json(body)
    except ValidationError as exc:
        raise UpdateShapeError(_first_error(exc)) from None


def _first_error(exc: ValidationError) -> str:
    """A short, safe description: where and what, never the offending value."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "invalid Update"
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"[:200]
