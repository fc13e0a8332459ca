"""Helpers for the chat rules' tests: commands and members' messages through the webhook."""

from __future__ import annotations

from typing import Any

from moderation.rules import matcher
from tests.builders import make_message, next_update_id, user
from tests.moderation.helpers import CHAT_OWNER, GROUP, MEMBER


def command(post_update: Any, text: str, *, sender: int = CHAT_OWNER, **extra: Any) -> str:
    """Send a command as ``sender`` (the chat's owner, by default); the outcome."""
    message = make_message(text, chat_id=GROUP, user_id=sender, **extra)
    return outcome(post_update, {"update_id": next_update_id(), "message": message})


def said(
    text: str | None = "hello", *, user_id: int = MEMBER, name: str = "Mallory", **extra: Any
) -> dict[str, Any]:
    """A member's message in the group (not yet sent)."""
    message = make_message(text, chat_id=GROUP, user_id=user_id, **extra)
    message["from"] = user(user_id, name, username=name.lower())
    return message


def send(post_update: Any, message: dict[str, Any], *, update_id: int | None = None) -> str:
    update_id = next_update_id() if update_id is None else update_id
    return outcome(post_update, {"update_id": update_id, "message": message})


def edit(post_update: Any, message: dict[str, Any], text: str, **extra: Any) -> str:
    edited = {**message, "text": text, "edit_date": message["date"] + 5, **extra}
    return outcome(post_update, {"update_id": next_update_id(), "edited_message": edited})


def outcome(post_update: Any, update: dict[str, Any]) -> str:
    response = post_update(update)
    assert response.status_code == 200, response.content
    matcher.forget()  # as another process would, CACHE_SECONDS later
    return str(response["X-Update-Outcome"])


def url_entity(text: str, url: str) -> dict[str, Any]:
    start = text.index(url)
    return {"type": "url", "offset": start, "length": len(url)}
