"""What an Update must look like before anything acts on it.

Only the fields the pipeline relies on are checked; the rest of the object is passed through
untouched. An Update of a type we do not handle is valid (and ignored later); an object that
is not an Update at all, or a handled type missing what we rely on, is a ``UpdateShapeError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

HANDLED_TYPES = ("message", "edited_message", "callback_query", "chat_join_request")
_COMMAND_RE = re.compile(r"^/([A-Za-z0-9_]{1,64})(?:@([A-Za-z0-9_]{3,64}))?(?:\s+(.*))?$", re.S)


class UpdateShapeError(ValueError):
    """The body is not a Telegram Update we can read; the webhook answers 400."""


@dataclass(frozen=True)
class Command:
    name: str
    mention: str | None
    args: str


@dataclass(frozen=True)
class Update:
    update_id: int
    type: str
    payload: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)

    @property
    def message(self) -> dict[str, Any] | None:
        """The message this update carries or refers to (a callback's message included)."""
        if self.type in ("message", "edited_message"):
            return self.payload
        if self.type == "callback_query":
            message = self.payload.get("message")
            return message if isinstance(message, dict) else None
        return None

    @property
    def chat(self) -> dict[str, Any] | None:
        if self.type == "chat_join_request":
            return self.payload["chat"]
        message = self.message
        return message.get("chat") if message else None

    @property
    def chat_id(self) -> int | None:
        chat = self.chat
        return chat.get("id") if chat else None

    @property
    def chat_type(self) -> str | None:
        chat = self.chat
        return chat.get("type") if chat else None

    @property
    def user(self) -> dict[str, Any] | None:
        sender = self.payload.get("from") if self.type in HANDLED_TYPES else None
        return sender if isinstance(sender, dict) else None

    @property
    def user_id(self) -> int | None:
        user = self.user
        return user.get("id") if user else None

    @property
    def text(self) -> str:
        if self.type in ("message", "edited_message"):
            return str(self.payload.get("text") or self.payload.get("caption") or "")
        return ""

    @property
    def callback_data(self) -> str:
        return str(self.payload.get("data") or "") if self.type == "callback_query" else ""

    def command(self) -> Command | None:
        """The bot command this message starts with, if any (``/name@bot args``)."""
        if self.type != "message" or not isinstance(self.payload.get("text"), str):
            return None
        match = _COMMAND_RE.match(self.payload["text"].strip())
        if not match:
            return None
        return Command(name=match[1].lower(), mention=match[2], args=(match[3] or "").strip())


def parse_update(data: Any) -> Update:
    """Check ``data`` is an Update and return it typed; raise UpdateShapeError if not."""
    if not isinstance(data, dict):
        raise UpdateShapeError("an Update is a JSON object")
    update_id = data.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool) or update_id < 0:
        raise UpdateShapeError("update_id must be a non-negative integer")
    kinds = [key for key in data if key != "update_id"]
    if len(kinds) > 1:
        raise UpdateShapeError("an Update carries at most one of its optional fields")
    if not kinds:
        return Update(update_id=update_id, type="unknown", payload={}, raw=data)
    kind = kinds[0]
    payload = data[kind]
    if not isinstance(payload, dict):
        raise UpdateShapeError(f"{kind} must be an object")
    if kind in HANDLED_TYPES:
        _CHECKS[kind](payload)
    return Update(update_id=update_id, type=kind, payload=payload, raw=data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require_int(obj: dict[str, Any], name: str, where: str) -> None:
    if not _is_int(obj.get(name)):
        raise UpdateShapeError(f"{where}.{name} must be an integer")


def _require_user(obj: dict[str, Any], name: str, where: str, *, optional: bool = False) -> None:
    value = obj.get(name)
    if value is None and optional:
        return
    if not isinstance(value, dict):
        raise UpdateShapeError(f"{where}.{name} must be an object")
    _require_int(value, "id", f"{where}.{name}")


def _require_chat(obj: dict[str, Any], where: str) -> None:
    chat = obj.get("chat")
    if not isinstance(chat, dict):
        raise UpdateShapeError(f"{where}.chat must be an object")
    _require_int(chat, "id", f"{where}.chat")
    if not isinstance(chat.get("type"), str):
        raise UpdateShapeError(f"{where}.chat.type must be a string")


def _check_message(message: dict[str, Any], where: str = "message") -> None:
    _require_int(message, "message_id", where)
    _require_int(message, "date", where)
    _require_chat(message, where)
    _require_user(message, "from", where, optional=True)
    for text_field in ("text", "caption"):
        if text_field in message and not isinstance(message[text_field], str):
            raise UpdateShapeError(f"{where}.{text_field} must be a string")


def _check_callback_query(query: dict[str, Any]) -> None:
    if not isinstance(query.get("id"), str):
        raise UpdateShapeError("callback_query.id must be a string")
    _require_user(query, "from", "callback_query")
    if "data" in query and not isinstance(query["data"], str):
        raise UpdateShapeError("callback_query.data must be a string")
    message = query.get("message")
    if message is not None:
        if not isinstance(message, dict):
            raise UpdateShapeError("callback_query.message must be an object")
        _require_int(message, "message_id", "callback_query.message")
        _require_chat(message, "callback_query.message")


def _check_join_request(request: dict[str, Any]) -> None:
    _require_chat(request, "chat_join_request")
    _require_user(request, "from", "chat_join_request")
    _require_int(request, "user_chat_id", "chat_join_request")
    _require_int(request, "date", "chat_join_request")


_CHECKS = {
    "message": _check_message,
    "edited_message": lambda message: _check_message(message, "edited_message"),
    "callback_query": _check_callback_query,
    "chat_join_request": _check_join_request,
}
