"""What the fake Bot API answers: messages, polls, the webhook and the update queue.

Not thread-safe on its own: `FakeTelegram` calls it under its lock.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.botapi_spec import ATTACHMENTS, BotApiSpec, RequestError, UploadedFile
from tests.fakes.telegram_files import FileResults
from tests.fakes.telegram_forum import ForumResults
from tests.fakes.telegram_members import ChatMemberResults

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete "
    "the webhook first"
)
WEBHOOK_PORTS = frozenset({80, 88, 443, 8443})
_SECRET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_CONTENT_KEYS = ("text", "entities", "caption", "caption_entities", "reply_markup")

Json = dict[str, Any]


class Results(ChatMemberResults, FileResults, ForumResults):
    """The fake's Telegram-side state and the result of each method (chat members and
    deletions: ``ChatMemberResults``; files: ``FileResults``)."""

    def __init__(self, spec: BotApiSpec, clock: Callable[[], float]) -> None:
        self.spec = spec
        self.clock = clock
        self.updates: list[Json] = []
        self.next_update_id = 1
        self.webhook: Json | None = None
        self.last_error: tuple[int, str] | None = None
        self.chats: dict[int, Json] = {}
        self.member_counts: dict[int, int] = {}  # getChatMemberCount's answer per chat
        self._messages: dict[tuple[int, int], Json] = {}
        self._last_message_id: dict[int, int] = {}
        self._serial = 0
        self._init_members()
        self._init_files()
        self._init_forum()

    def answer(self, method: str, params: Json, bot_id: int) -> Any:
        """The result of a valid call; RequestError for the errors Telegram would give."""
        handler = getattr(self, f"_{method}", None)
        if handler is not None:
            return handler(params, bot_id)
        return self._generic(method, params, bot_id)

    # -- update queue ---------------------------------------------------------------------

    def push_update(self, update: Json) -> int:
        """Queue a copy of `update`, assigning `update_id` when missing."""
        update = dict(update)
        update.setdefault("update_id", self.next_update_id)
        self.next_update_id = max(self.next_update_id, update["update_id"] + 1)
        self.updates.append(update)
        return int(update["update_id"])

    def confirm(self, offset: int | None) -> None:
        """Forget updates confirmed by a getUpdates `offset` (negative: keep the last -offset)."""
        if offset is None or offset == 0:
            return
        if offset > 0:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        else:
            self.updates = self.updates[offset:]

    def check_polling_allowed(self) -> None:
        """getUpdates and a webhook are mutually exclusive."""
        if self.webhook:
            raise RequestError(409, WEBHOOK_ACTIVE)

    # -- messages -------------------------------------------------------------------------

    def stored_message(self, chat_id: int | str, message_id: int) -> Json | None:
        """A sent message as last edited, or None."""
        message = self._messages.get((self.chat(chat_id)["id"], message_id))
        return dict(message) if message else None

    def chat(self, chat_id: int | str) -> Json:
        """The Chat object for a chat_id: registered, or inferred from the id's shape."""
        text = str(chat_id)
        if not text.lstrip("-").isdigit():  # @username: a public channel
            name = text.lstrip("@")
            numeric = -1_000_000_000_000 - zlib.crc32(name.lower().encode())
            return self.chats.get(numeric, {"id": numeric, "type": "channel", "username": name})
        numeric = int(text)
        if numeric in self.chats:
            return dict(self.chats[numeric])
        if numeric > 0:
            return {"id": numeric, "type": "private", "first_name": f"User {numeric}"}
        kind = "supergroup" if text.startswith("-100") else "group"
        return {"id": numeric, "type": kind, "title": f"Fake {kind} {numeric}"}

    def _sendMessage(self, params: Json, bot_id: int) -> Json:
        return self._new_message(params, bot_id, _pick(params, "text", "entities"))

    def _sendPhoto(self, params: Json, bot_id: int) -> Json:
        photo = params["photo"]
        file_id = photo if isinstance(photo, str) and "://" not in photo else self._file_id()
        sizes = [_photo_size(f"{file_id}-s", 90), _photo_size(file_id, 800)]
        if isinstance(photo, UploadedFile):
            sizes[-1]["file_size"] = len(photo.data)
        content = {"photo": sizes, **_pick(params, "caption", "caption_entities")}
        return self._new_message(params, bot_id, content)

    def _sendPoll(self, params: Json, bot_id: int) -> Json:
        _check_quiz(params)
        self._serial += 1
        options = [
            {"persistent_id": str(i), "text": option["text"], "voter_count": 0}
            for i, option in enumerate(params["options"])
        ]
        poll = {
            "id": f"fake-poll-{self._serial}",
            "question": params["question"],
            "options": options,
            "total_voter_count": 0,
            "is_closed": params.get("is_closed", False),
            "is_anonymous": params.get("is_anonymous", True),
            "type": params.get("type", "regular"),
            "allows_multiple_answers": params.get("allows_multiple_answers", False),
            "allows_revoting": params.get("allows_revoting", False),
            "members_only": params.get("members_only", False),
            **_pick(params, "explanation", "open_period", "close_date", "correct_option_ids"),
        }
        return self._new_message(params, bot_id, {"poll": poll})

    def _sendMediaGroup(self, params: Json, bot_id: int) -> list[Json]:
        """An album: 2-10 items (photos and videos mix; documents or audios only among
        themselves), captions of at most 1024 characters; one message per item sharing a
        media_group_id."""
        media = params["media"]
        if not 2 <= len(media) <= 10:
            raise RequestError(400, "Bad Request: media group must include 2-10 items")
        kinds = {item.get("type") for item in media}
        if len(kinds) > 1 and not kinds <= {"photo", "video"}:
            raise RequestError(400, "Bad Request: MEDIA_INVALID")
        if any(len(item.get("caption") or "") > 1024 for item in media):
            raise RequestError(400, "Bad Request: message caption is too long")
        self._serial += 1
        group = f"fake-group-{self._serial}"
        messages = []
        attachments = params.get(ATTACHMENTS, {})
        for item in media:
            source = item["media"]
            file_id = source if "://" not in source else self._file_id()
            upload = attachments.get(source.removeprefix("attach://"))
            if item["type"] == "photo":
                content: Json = {"photo": [_photo_size(file_id, 800)]}
                if upload is not None:
                    content["photo"][0]["file_size"] = len(upload.data)
            else:
                video = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "duration": 10}
                content = {"video": {**video, "width": 640, "height": 360}}
            content.update(_pick(item, "caption"), media_group_id=group)
            messages.append(self._new_message(_pick(params, "chat_id"), bot_id, content))
        return messages

    def _copyMessage(self, params: Json, bot_id: int) -> Json:
        source = self.stored_message(params["from_chat_id"], params["message_id"]) or {}
        content = _pick(source, "text", "entities", "photo", "poll")
        content.update(_pick(params, "caption", "caption_entities"))
        message = self._new_message(params, bot_id, content)
        return {"message_id": message["message_id"]}

    def _editMessageText(self, params: Json, bot_id: int) -> Json | bool:
        if "text" not in params and "rich_message" not in params:
            raise RequestError(400, "Bad Request: message text is empty")
        return self._edit(params, bot_id, _pick(params, "text", "entities"))

    def _editMessageCaption(self, params: Json, bot_id: int) -> Json | bool:
        return self._edit(params, bot_id, _pick(params, "caption", "caption_entities"))

    def _editMessageReplyMarkup(self, params: Json, bot_id: int) -> Json | bool:
        return self._edit(params, bot_id, {})

    def _stopPoll(self, params: Json, bot_id: int) -> Json:
        key = (self.chat(params["chat_id"])["id"], params["message_id"])
        message = self._messages.get(key)
        if message is None or "poll" not in message:
            raise RequestError(400, "Bad Request: message with poll to stop not found")
        message["poll"] = {**message["poll"], "is_closed": True}
        _set_markup(message, params)
        return dict(message["poll"])

    def _new_message(self, params: Json, bot_id: int, content: Json) -> Json:
        self.check_thread(params, bot_id)
        chat = self.chat(params["chat_id"])
        message_id = self._last_message_id.get(chat["id"], 0) + 1
        self._last_message_id[chat["id"]] = message_id
        message = self._message_shell(chat, message_id, bot_id)
        message.update(_pick(params, "message_thread_id"))
        message.update(content)
        _set_markup(message, params)
        self._messages[(chat["id"], message_id)] = message
        return dict(message)

    def _edit(self, params: Json, bot_id: int, changes: Json) -> Json | bool:
        if "inline_message_id" in params:
            return True
        if "chat_id" not in params or "message_id" not in params:
            raise RequestError(400, "Bad Request: message identifier is not specified")
        chat = self.chat(params["chat_id"])
        old = self._messages.get((chat["id"], params["message_id"]))
        # A message the fake did not send (one from a test's update) is edited as if it had.
        message = dict(old or self._message_shell(chat, params["message_id"], bot_id))
        message.update(changes)
        _set_markup(message, params)
        if old is not None and _content(old) == _content(message):
            raise RequestError(400, NOT_MODIFIED)
        message["edit_date"] = int(self.clock())
        self._messages[(chat["id"], params["message_id"])] = message
        return dict(message)

    def _message_shell(self, chat: Json, message_id: int, bot_id: int) -> Json:
        message: Json = {"message_id": message_id, "date": int(self.clock()), "chat": chat}
        if chat["type"] == "channel":
            message["sender_chat"] = chat
        else:
            message["from"] = self._bot_user(bot_id)
        return message

    # -- bot, webhook ---------------------------------------------------------------------

    def _getMe(self, params: Json, bot_id: int) -> Json:
        user = self._bot_user(bot_id)
        user.update(can_join_groups=True, can_read_all_group_messages=False)
        user["supports_inline_queries"] = False
        return user

    def _setWebhook(self, params: Json, bot_id: int) -> bool:
        url = params["url"]
        if url == "":
            return self._deleteWebhook(params, bot_id)
        _check_webhook(url, params.get("secret_token"))
        previous = self.webhook or {}
        if previous.get("url") != url:
            self.last_error = None
        self.webhook = {
            "url": url,
            "has_custom_certificate": "certificate" in params,
            "max_connections": params.get("max_connections", previous.get("max_connections", 40)),
            "allowed_updates": params.get("allowed_updates", previous.get("allowed_updates")),
            "ip_address": params.get("ip_address"),
            "secret_token": params.get("secret_token"),
        }
        if params.get("drop_pending_updates"):
            self.updates.clear()
        return True

    def _deleteWebhook(self, params: Json, bot_id: int) -> bool:
        self.webhook = None
        self.last_error = None
        if params.get("drop_pending_updates"):
            self.updates.clear()
        return True

    def _getWebhookInfo(self, params: Json, bot_id: int) -> Json:
        hook = self.webhook or {}
        info: Json = {
            "url": hook.get("url", ""),
            "has_custom_certificate": hook.get("has_custom_certificate", False),
            "pending_update_count": len(self.updates),
        }
        for key in ("ip_address", "max_connections", "allowed_updates"):
            if hook.get(key) is not None:
                info[key] = hook[key]
        if self.last_error is not None:
            info["last_error_date"], info["last_error_message"] = self.last_error
        return info

    def _getChatMemberCount(self, params: Json, bot_id: int) -> int:
        return self.member_counts.get(int(params["chat_id"]), 0)

    def _leaveChat(self, params: Json, bot_id: int) -> bool:
        self.member_counts.pop(int(params["chat_id"]), None)
        return True

    def _generic(self, method: str, params: Json, bot_id: int) -> Any:
        """A plausible result for a method without its own handler, from its return type."""
        returns = self.spec.methods[method]["returns"][0]
        if returns == "Message" and "chat_id" in params:
            return self._new_message(params, bot_id, _pick(params, "caption"))
        if returns.startswith("Array of "):
            return []
        simple = {"Boolean": True, "Integer": 0, "String": "", "User": self._bot_user(bot_id)}
        return simple.get(returns, {})

    def _bot_user(self, bot_id: int) -> Json:
        return {"id": bot_id, "is_bot": True, "first_name": "Fake Bot", "username": "fake_bot"}

    def _file_id(self) -> str:
        self._serial += 1
        return f"fake-file-{self._serial}"


def _check_quiz(params: Json) -> None:
    """A quiz needs its correct answers among the options (the Bot API 10.1 sendPoll: a
    ``correct_option_ids`` list, increasing, 0-based; an explanation of 0-200 characters)."""
    correct = params.get("correct_option_ids")
    if params.get("type", "regular") != "quiz":
        return
    if not correct:
        raise RequestError(400, "Bad Request: QUIZ_CORRECT_ANSWERS_EMPTY")
    if sorted(set(correct)) != correct or not all(
        0 <= index < len(params["options"]) for index in correct
    ):
        raise RequestError(400, "Bad Request: QUIZ_CORRECT_ANSWER_INVALID")
    if len(params.get("explanation", "")) > 200:
        raise RequestError(400, "Bad Request: QUIZ_EXPLANATION_TOO_LONG")


def _photo_size(file_id: str, side: int) -> Json:
    return {"file_id": file_id, "file_unique_id": f"u-{file_id}", "width": side, "height": side}


def _pick(params: Json, *keys: str) -> Json:
    return {key: params[key] for key in keys if key in params}


def _set_markup(message: Json, params: Json) -> None:
    # Only inline keyboards show up on a Message; leaving reply_markup out of an edit (or an
    # empty keyboard) removes it.
    markup = params.get("reply_markup")
    if isinstance(markup, dict) and markup.get("inline_keyboard"):
        message["reply_markup"] = markup
    else:
        message.pop("reply_markup", None)


def _content(message: Json) -> Json:
    return _pick(message, *_CONTENT_KEYS)


def _check_webhook(url: str, secret_token: str | None) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise RequestError(
            400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
        )
    if (parts.port or 443) not in WEBHOOK_PORTS:
        raise RequestError(
            400, "Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443"
        )
    if secret_token is not None and len(secret_token) > 256:
        raise RequestError(400, "Bad Request: secret token is too long")
    if secret_token is not None and not set(secret_token) <= _SECRET_CHARS:
        raise RequestError(400, "Bad Request: secret token contains unallowed characters")
