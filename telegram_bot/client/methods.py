"""Typed helpers over `call`: one per Bot API method the bot uses.

Each helper takes keyword-only arguments named like the Bot API parameters, drops the ones left
as None, passes `**extra` through unchanged (for rarely used parameters) and checks the shape of
the result. Objects such as `reply_markup` are plain dicts in Bot API form.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, BinaryIO

from telegram_bot.errors import TelegramApiError

NOT_MODIFIED = "message is not modified"

ChatId = int | str
DELETE_BATCH = 100  # deleteMessages takes at most this many ids
JsonObject = dict[str, Any]
# A file_id or URL string, raw bytes, a (filename, bytes[, content_type]) tuple or a file object.
InputFile = str | bytes | tuple[str, bytes] | tuple[str, bytes, str] | BinaryIO


class TelegramMethods:
    """Mixin of typed Bot API helpers; the class using it provides `call`."""

    def call(self, method: str, /, *, request_timeout: Any = None, **params: Any) -> Any:
        """Send one Bot API request and return its result (implemented by the client)."""
        raise NotImplementedError

    # -- messages ---------------------------------------------------------------------------

    def send_message(
        self,
        *,
        chat_id: ChatId,
        text: str,
        parse_mode: str | None = None,
        entities: list[JsonObject] | None = None,
        reply_markup: JsonObject | None = None,
        reply_parameters: JsonObject | None = None,
        message_thread_id: int | None = None,
        disable_notification: bool | None = None,
        link_preview_options: JsonObject | None = None,
        **extra: Any,
    ) -> JsonObject:
        """sendMessage; returns the sent Message."""
        return self._call_dict("sendMessage", **_locals(locals()))

    def send_photo(
        self,
        *,
        chat_id: ChatId,
        photo: InputFile,
        caption: str | None = None,
        parse_mode: str | None = None,
        reply_markup: JsonObject | None = None,
        message_thread_id: int | None = None,
        disable_notification: bool | None = None,
        **extra: Any,
    ) -> JsonObject:
        """sendPhoto; a string `photo` is a file_id or URL, bytes or a file are uploaded."""
        return self._call_dict("sendPhoto", **_locals(locals()))

    def copy_message(
        self,
        *,
        chat_id: ChatId,
        from_chat_id: ChatId,
        message_id: int,
        caption: str | None = None,
        parse_mode: str | None = None,
        reply_markup: JsonObject | None = None,
        message_thread_id: int | None = None,
        disable_notification: bool | None = None,
        **extra: Any,
    ) -> JsonObject:
        """copyMessage; returns a MessageId object (`{"message_id": ...}`), not a Message."""
        return self._call_dict("copyMessage", **_locals(locals()))

    def edit_message_text(
        self,
        *,
        text: str,
        chat_id: ChatId | None = None,
        message_id: int | None = None,
        inline_message_id: str | None = None,
        parse_mode: str | None = None,
        entities: list[JsonObject] | None = None,
        reply_markup: JsonObject | None = None,
        link_preview_options: JsonObject | None = None,
        **extra: Any,
    ) -> JsonObject | bool:
        """editMessageText; the edited Message, or True for an inline message."""
        return self._call_edit("editMessageText", **_locals(locals()))

    def edit_message_caption(
        self,
        *,
        chat_id: ChatId | None = None,
        message_id: int | None = None,
        inline_message_id: str | None = None,
        caption: str | None = None,
        parse_mode: str | None = None,
        reply_markup: JsonObject | None = None,
        **extra: Any,
    ) -> JsonObject | bool:
        """editMessageCaption; the edited Message, or True for an inline message."""
        return self._call_edit("editMessageCaption", **_locals(locals()))

    def edit_message_reply_markup(
        self,
        *,
        chat_id: ChatId | None = None,
        message_id: int | None = None,
        inline_message_id: str | None = None,
        reply_markup: JsonObject | None = None,
        **extra: Any,
    ) -> JsonObject | bool:
        """editMessageReplyMarkup; no `reply_markup` removes the keyboard."""
        return self._call_edit("editMessageReplyMarkup", **_locals(locals()))

    def delete_message(self, *, chat_id: ChatId, message_id: int) -> bool:
        """deleteMessage; True on success."""
        return self._call_bool("deleteMessage", chat_id=chat_id, message_id=message_id)

    def delete_messages(self, *, chat_id: ChatId, message_ids: Sequence[int]) -> bool:
        """deleteMessages: 1-100 ids; ones that cannot be found are skipped."""
        ids = list(message_ids)
        if not 1 <= len(ids) <= DELETE_BATCH:
            raise ValueError(f"deleteMessages takes 1-{DELETE_BATCH} message ids, got {len(ids)}")
        return self._call_bool("deleteMessages", chat_id=chat_id, message_ids=ids)

    def answer_callback_query(
        self,
        *,
        callback_query_id: str,
        text: str | None = None,
        show_alert: bool | None = None,
        url: str | None = None,
        cache_time: int | None = None,
    ) -> bool:
        """answerCallbackQuery; True on success."""
        return self._call_bool("answerCallbackQuery", **_locals(locals()))

    # -- polls ------------------------------------------------------------------------------

    def send_poll(
        self,
        *,
        chat_id: ChatId,
        question: str,
        options: Sequence[str | JsonObject],
        is_anonymous: bool | None = None,
        type: str | None = None,
        allows_multiple_answers: bool | None = None,
        reply_markup: JsonObject | None = None,
        message_thread_id: int | None = None,
        **extra: Any,
    ) -> JsonObject:
        """sendPoll; plain strings in `options` become InputPollOption objects."""
        params = _locals(locals())
        params["options"] = [{"text": o} if isinstance(o, str) else o for o in options]
        return self._call_dict("sendPoll", **params)

    def stop_poll(
        self, *, chat_id: ChatId, message_id: int, reply_markup: JsonObject | None = None
    ) -> JsonObject:
        """stopPoll; returns the stopped Poll."""
        return self._call_dict("stopPoll", **_locals(locals()))

    # -- members ----------------------------------------------------------------------------

    def restrict_chat_member(
        self,
        *,
        chat_id: ChatId,
        user_id: int,
        permissions: JsonObject,
        until_date: int | datetime | None = None,
        use_independent_chat_permissions: bool | None = None,
    ) -> bool:
        """restrictChatMember; `until_date` may be an aware datetime."""
        params = _locals(locals())
        params["until_date"] = _unix_time(until_date)
        return self._call_bool("restrictChatMember", **params)

    def ban_chat_member(
        self,
        *,
        chat_id: ChatId,
        user_id: int,
        until_date: int | datetime | None = None,
        revoke_messages: bool | None = None,
    ) -> bool:
        """banChatMember; `until_date` may be an aware datetime (none: forever)."""
        params = _locals(locals())
        params["until_date"] = _unix_time(until_date)
        return self._call_bool("banChatMember", **params)

    def unban_chat_member(
        self, *, chat_id: ChatId, user_id: int, only_if_banned: bool | None = None
    ) -> bool:
        """unbanChatMember; without `only_if_banned` it also removes a present member."""
        return self._call_bool("unbanChatMember", **_locals(locals()))

    def get_chat_member(self, *, chat_id: ChatId, user_id: int) -> JsonObject:
        """getChatMember; a ChatMember object (its `status` tells the kind)."""
        return self._call_dict("getChatMember", chat_id=chat_id, user_id=user_id)

    def get_chat_administrators(
        self, *, chat_id: ChatId, return_bots: bool | None = None
    ) -> list[JsonObject]:
        """getChatAdministrators; the owner and administrators (this bot included)."""
        result = self.call("getChatAdministrators", **_locals(locals()))
        if isinstance(result, list) and all(isinstance(item, dict) for item in result):
            return result
        raise _unexpected("getChatAdministrators", result)

    def get_chat_member_count(self, *, chat_id: ChatId) -> int:
        """getChatMemberCount; the number of members."""
        result = self.call("getChatMemberCount", chat_id=chat_id)
        if isinstance(result, int) and not isinstance(result, bool):
            return result
        raise _unexpected("getChatMemberCount", result)

    def leave_chat(self, *, chat_id: ChatId) -> bool:
        """leaveChat; True on success."""
        return self._call_bool("leaveChat", chat_id=chat_id)

    def approve_chat_join_request(self, *, chat_id: ChatId, user_id: int) -> bool:
        """approveChatJoinRequest; True on success."""
        return self._call_bool("approveChatJoinRequest", chat_id=chat_id, user_id=user_id)

    def decline_chat_join_request(self, *, chat_id: ChatId, user_id: int) -> bool:
        """declineChatJoinRequest; True on success."""
        return self._call_bool("declineChatJoinRequest", chat_id=chat_id, user_id=user_id)

    def create_chat_invite_link(
        self,
        *,
        chat_id: ChatId,
        name: str | None = None,
        expire_date: int | datetime | None = None,
        member_limit: int | None = None,
        creates_join_request: bool | None = None,
    ) -> JsonObject:
        """createChatInviteLink; the new ChatInviteLink (its `invite_link` is the URL)."""
        params = _locals(locals())
        params["expire_date"] = _unix_time(expire_date)
        return self._call_dict("createChatInviteLink", **params)

    def revoke_chat_invite_link(self, *, chat_id: ChatId, invite_link: str) -> JsonObject:
        """revokeChatInviteLink; the revoked ChatInviteLink."""
        return self._call_dict("revokeChatInviteLink", chat_id=chat_id, invite_link=invite_link)

    # -- files ------------------------------------------------------------------------------

    def get_file(self, *, file_id: str) -> JsonObject:
        """getFile: the File (``file_path`` to download it with, ``file_size``)."""
        return self._call_dict("getFile", file_id=file_id)

    # -- bot and updates --------------------------------------------------------------------

    def get_me(self) -> JsonObject:
        """getMe; the bot's User."""
        return self._call_dict("getMe")

    def set_webhook(
        self,
        *,
        url: str,
        secret_token: str | None = None,
        allowed_updates: Sequence[str] | None = None,
        max_connections: int | None = None,
        drop_pending_updates: bool | None = None,
        ip_address: str | None = None,
        certificate: InputFile | None = None,
    ) -> bool:
        """setWebhook; an empty `url` removes the webhook."""
        params = _locals(locals())
        if allowed_updates is not None:
            params["allowed_updates"] = list(allowed_updates)
        return self._call_bool("setWebhook", **params)

    def delete_webhook(self, *, drop_pending_updates: bool | None = None) -> bool:
        """deleteWebhook; True on success."""
        return self._call_bool("deleteWebhook", drop_pending_updates=drop_pending_updates)

    def get_webhook_info(self) -> JsonObject:
        """getWebhookInfo; the WebhookInfo object."""
        return self._call_dict("getWebhookInfo")

    def get_updates(
        self,
        *,
        offset: int | None = None,
        limit: int | None = None,
        timeout: int | None = None,
        allowed_updates: Sequence[str] | None = None,
    ) -> list[JsonObject]:
        """getUpdates; `timeout` is the long-poll time, the HTTP read timeout is widened to fit."""
        params = _locals(locals())
        if allowed_updates is not None:
            params["allowed_updates"] = list(allowed_updates)
        request_timeout = self._long_poll_timeout(timeout or 0)
        result = self.call("getUpdates", request_timeout=request_timeout, **params)
        if isinstance(result, list):
            return result
        raise _unexpected("getUpdates", result)

    # -- plumbing ---------------------------------------------------------------------------

    def _long_poll_timeout(self, seconds: int) -> Any:
        """The request timeout for a long poll of `seconds`; None keeps the client default."""
        return None

    def _call_dict(self, method: str, **params: Any) -> JsonObject:
        result = self.call(method, **params)
        if isinstance(result, dict):
            return result
        raise _unexpected(method, result)

    def _call_bool(self, method: str, **params: Any) -> bool:
        result = self.call(method, **params)
        if isinstance(result, bool):
            return result
        raise _unexpected(method, result)

    def _call_edit(self, method: str, **params: Any) -> JsonObject | bool:
        """An edit; Telegram's "message is not modified" (the message shows that already: a
        double press, a repeated edit) is success, answered True."""
        try:
            result = self.call(method, **params)
        except TelegramApiError as exc:
            if exc.status == 400 and NOT_MODIFIED in (exc.description or "").lower():
                return True
            raise
        if isinstance(result, (dict, bool)):
            return result
        raise _unexpected(method, result)


def _locals(names: dict[str, Any]) -> dict[str, Any]:
    """A helper's arguments as Bot API params: `self` dropped, `**extra` merged in."""
    params = {key: value for key, value in names.items() if key not in ("self", "extra")}
    params.update(names.get("extra") or {})
    return params


def _unix_time(value: int | datetime | None) -> int | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("until_date must be timezone-aware")
        return int(value.timestamp())
    return value


def _unexpected(method: str, result: Any) -> TelegramApiError:
    description = f"unexpected result type {type(result).__name__}"
    return TelegramApiError(method, status=200, description=description, retryable=False)
