"""Sessions, workflows and dead letters on top of the KV contract."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from telegram_bot.errors import WorkflowError
from telegram_bot.state import KVStore
from telegram_bot.state.dead_letters import DeadLetterStore
from telegram_bot.state.sessions import SessionDecodeError, SessionStore
from telegram_bot.state.workflows import WorkflowStore


def v2_migrate(version: int, raw: Any) -> dict[str, Any]:
    if version == 1:
        return {"name": raw["name"], "locale": "en"}
    if version == 0 and isinstance(raw, dict) and "name" in raw:
        return {"name": raw["name"], "locale": "en"}
    raise SessionDecodeError(f"cannot migrate from {version}")


def test_a_session_round_trips_in_its_envelope(kv: KVStore) -> None:
    sessions: SessionStore[dict[str, Any]] = SessionStore(kv, version=2)
    sessions.save(7, {"name": "Ann", "locale": "ru"}, chat_id=-100)
    assert kv.get("session:-100:7") == {"v": 2, "d": {"name": "Ann", "locale": "ru"}}
    assert sessions.load(7, chat_id=-100) == {"name": "Ann", "locale": "ru"}
    assert sessions.load(7) is None  # another scope


def test_an_older_session_is_migrated_and_written_back(kv: KVStore) -> None:
    kv.set("session:u:7", {"v": 1, "d": {"name": "Ann"}})
    sessions: SessionStore[dict[str, Any]] = SessionStore(kv, version=2, migrate=v2_migrate)
    assert sessions.load(7) == {"name": "Ann", "locale": "en"}
    assert kv.get("session:u:7") == {"v": 2, "d": {"name": "Ann", "locale": "en"}}


def test_a_value_without_envelope_is_version_zero(kv: KVStore) -> None:
    kv.set("session:u:7", {"name": "Bob"})
    sessions: SessionStore[dict[str, Any]] = SessionStore(kv, version=2, migrate=v2_migrate)
    assert sessions.load(7) == {"name": "Bob", "locale": "en"}


def test_an_unreadable_session_is_logged_and_read_as_absent(
    kv: KVStore, caplog: pytest.LogCaptureFixture
) -> None:
    kv.set("session:u:7", {"v": 9, "d": "garbage"})

    def strict(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise SessionDecodeError("not a dict")
        return data

    sessions = SessionStore(kv, version=2, decode=strict, migrate=v2_migrate)
    with caplog.at_level(logging.ERROR):
        assert sessions.load(7) is None
    assert "session:u:7" in caplog.text
    kv.set("session:u:8", {"v": 2, "d": [1, 2]})
    assert sessions.load(8) is None
    assert kv.get("session:u:8") == {"v": 2, "d": [1, 2]}  # left for inspection, not deleted


def test_a_workflow_is_scoped_resumable_and_expires(kv: KVStore) -> None:
    workflows = WorkflowStore(kv)
    started = workflows.start(
        chat_id=5, user_id=7, name="support", step="await_text", ttl_ms=150, data={"n": 1}
    )
    resumed = WorkflowStore(kv).get(chat_id=5, user_id=7)  # e.g. another process
    assert resumed == started
    assert not resumed.expired
    assert workflows.get(chat_id=6, user_id=7) is None
    time.sleep(0.2)
    expired = workflows.get(chat_id=5, user_id=7)
    assert expired is not None
    assert expired.expired
    with pytest.raises(WorkflowError, match="expired"):
        workflows.advance(expired, step="next")


def test_a_workflow_advances_once_per_revision(kv: KVStore) -> None:
    workflows = WorkflowStore(kv)
    first = workflows.start(chat_id=5, user_id=7, name="post", step="content", ttl_ms=60_000)
    second = workflows.advance(first, step="preview", data={"text": "hi"})
    assert (second.step, second.revision, second.data) == ("preview", 2, {"text": "hi"})
    with pytest.raises(WorkflowError, match="concurrently"):
        workflows.advance(first, step="other")  # stale copy loses
    assert workflows.finish(first) is False
    assert workflows.finish(second) is True
    assert workflows.get(chat_id=5, user_id=7) is None


def test_start_if_free_leaves_another_live_workflow_alone(kv: KVStore) -> None:
    flows = WorkflowStore(kv)
    other = flows.start(chat_id=7, user_id=7, name="support.open", step="text", ttl_ms=60_000)
    mine = {"token": "abc"}
    assert (
        flows.start_if_free(chat_id=7, user_id=7, name="q", step="a", ttl_ms=1000, data=mine)
        is None
    )
    assert flows.get(chat_id=7, user_id=7) == other
    flows.finish(other)  # ended: free
    started = flows.start_if_free(chat_id=7, user_id=7, name="q", step="a", ttl_ms=1000, data=mine)
    assert started is not None and flows.get(chat_id=7, user_id=7) == started
    # Its own (a re-delivery) may start again; another's may not.
    ours = lambda workflow: workflow.data.get("token") == "abc"  # noqa: E731
    again = flows.start_if_free(
        chat_id=7, user_id=7, name="q", step="a", ttl_ms=1000, data=mine, ours=ours
    )
    assert again is not None
    assert flows.start_if_free(chat_id=7, user_id=7, name="x", step="a", ttl_ms=1000) is None
    time.sleep(1.1)  # expired: free again
    assert flows.start_if_free(chat_id=7, user_id=7, name="x", step="a", ttl_ms=1000) is not None


def test_dead_letters_keep_the_update_and_a_redacted_error(kv: KVStore) -> None:
    letters = DeadLetterStore(kv, retention_ms=60_000)
    update = {"update_id": 42, "message": {"message_id": 1, "text": "hi"}}
    token = "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    letters.put(update, RuntimeError(f"boom at https://api.telegram.org/bot{token}/sendMessage"))
    letter = letters.get(42)
    assert letter is not None
    assert (letter.update_type, letter.error_class, letter.update) == (
        "message",
        "RuntimeError",
        update,
    )
    assert token not in letter.error
    page, cursor = letters.page()
    assert [item.update_id for item in page] == [42]
    assert cursor is None
    letters.drop(42)
    assert letters.get(42) is None


def test_dead_letters_expire_after_their_retention(kv: KVStore) -> None:
    letters = DeadLetterStore(kv, retention_ms=150)
    letters.put({"update_id": 1, "callback_query": {}}, ValueError("x"))
    time.sleep(0.25)
    assert letters.get(1) is None
    assert letters.page() == ([], None)
