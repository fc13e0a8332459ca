"""Dialogue state: workflows on top of the KV contract, their versions and migrations."""

from __future__ import annotations

import time
from typing import Any

import pytest

from telegram_bot.errors import WorkflowError
from telegram_bot.state import KVStore
from telegram_bot.state.workflows import WorkflowKind, WorkflowStore

SUPPORT = WorkflowKind("support")
POST = WorkflowKind("post")
Q, X = WorkflowKind("q"), WorkflowKind("x")


def _v2(step: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Version 1 had ``draft``; version 2 calls it ``text``."""
    return step, {"text": data["draft"]}


def _v3(step: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Version 3 renamed the step ``preview`` to ``confirm``."""
    return ("confirm" if step == "preview" else step), data


DRAFT = WorkflowKind("draft", version=3, migrations={1: _v2, 2: _v3})


def v1_value(**changes: Any) -> dict[str, Any]:
    """A draft workflow as a build before versions wrote it: no ``v``."""
    value = {
        "chat_id": 5,
        "user_id": 7,
        "name": "draft",
        "step": "preview",
        "expires_at_ms": int(time.time() * 1000) + 60_000,
        "revision": 2,
        "data": {"draft": "Hello"},
    }
    return {**value, **changes}


def test_a_workflow_is_scoped_resumable_and_expires(kv: KVStore) -> None:
    workflows = WorkflowStore(kv, SUPPORT)
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
    workflows = WorkflowStore(kv, POST)
    first = workflows.start(chat_id=5, user_id=7, name="post", step="content", ttl_ms=60_000)
    second = workflows.advance(first, step="preview", data={"text": "hi"})
    assert (second.step, second.revision, second.data) == ("preview", 2, {"text": "hi"})
    with pytest.raises(WorkflowError, match="concurrently"):
        workflows.advance(first, step="other")  # stale copy loses
    assert workflows.finish(first) is False
    assert workflows.finish(second) is True
    assert workflows.get(chat_id=5, user_id=7) is None


def test_start_if_free_leaves_another_live_workflow_alone(kv: KVStore) -> None:
    flows = WorkflowStore(kv, SUPPORT, Q, X)
    other = flows.start(chat_id=7, user_id=7, name="support", step="text", ttl_ms=60_000)
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


# --- versions ---------------------------------------------------------------------------------
def test_a_workflow_is_stored_with_its_kinds_version(kv: KVStore) -> None:
    WorkflowStore(kv, DRAFT).start(
        chat_id=5, user_id=7, name="draft", step="text", ttl_ms=60_000, data={"text": "Hi"}
    )
    stored = kv.get("workflow:5:7")
    assert stored["v"] == 3 and stored["data"] == {"text": "Hi"}


def test_a_workflow_of_an_older_version_is_migrated_and_written_back(kv: KVStore) -> None:
    kv.set("workflow:5:7", v1_value())
    workflows = WorkflowStore(kv, DRAFT)
    workflow = workflows.get(chat_id=5, user_id=7)
    assert workflow is not None and not workflow.unreadable
    assert (workflow.version, workflow.step, workflow.data) == (3, "confirm", {"text": "Hello"})
    assert workflow.revision == 2  # the same workflow, in its new shape
    stored = kv.get("workflow:5:7")
    assert (stored["v"], stored["step"], stored["data"]) == (3, "confirm", {"text": "Hello"})
    # It goes on from there: the compare-and-set expects the value written back.
    moved = workflows.advance(workflow, step="sent")
    assert moved.revision == 3 and workflows.finish(moved)


def test_a_workflow_changed_while_it_was_migrated_is_not_overwritten(
    kv: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    kv.set("workflow:5:7", v1_value())
    real = kv.compare_and_set

    def meanwhile(key: str, expected: Any, value: Any, ttl_ms: int | None = None) -> bool:
        real(key, expected, v1_value(revision=9), ttl_ms)  # another process advanced it
        return real(key, expected, value, ttl_ms)

    monkeypatch.setattr(kv, "compare_and_set", meanwhile)
    workflows = WorkflowStore(kv, DRAFT)
    workflow = workflows.get(chat_id=5, user_id=7)
    monkeypatch.undo()
    assert workflow is not None and workflow.data == {"text": "Hello"}
    assert kv.get("workflow:5:7")["revision"] == 9  # kept, not overwritten
    with pytest.raises(WorkflowError, match="concurrently"):
        workflows.advance(workflow, step="sent")


def test_a_workflow_of_a_newer_version_is_unreadable_and_can_be_ended(kv: KVStore) -> None:
    kv.set("workflow:5:7", v1_value(v=4, data={"body": "from a newer build"}))
    workflows = WorkflowStore(kv, DRAFT)
    workflow = workflows.get(chat_id=5, user_id=7)
    assert workflow is not None and workflow.unreadable and workflow.data == {}
    assert kv.get("workflow:5:7")["v"] == 4  # left as it was
    with pytest.raises(WorkflowError, match="unreadable"):
        workflows.advance(workflow, step="sent")
    assert workflows.finish(workflow) is True
    assert workflows.get(chat_id=5, user_id=7) is None


@pytest.mark.parametrize(
    "value",
    [
        v1_value(data={"no draft": 1}),  # the migration cannot read it
        v1_value(v="2"),  # not a version
        v1_value(v=0),
        v1_value(v=3, data=["not", "a", "dict"]),
        v1_value(v=3, lang="ru"),  # a field of a newer build
    ],
)
def test_a_workflow_that_cannot_be_read_is_unreadable(kv: KVStore, value: Any) -> None:
    kv.set("workflow:5:7", value)
    workflow = WorkflowStore(kv, DRAFT).get(chat_id=5, user_id=7)
    assert workflow is not None and workflow.unreadable and workflow.data == {}


def test_a_store_without_the_kind_reads_it_as_stored(kv: KVStore) -> None:
    """The router only needs the name; the owner's store migrates."""
    kv.set("workflow:5:7", v1_value(v=2, step="preview", data={"text": "Hi"}))
    workflow = WorkflowStore(kv).get(chat_id=5, user_id=7)
    assert workflow is not None and not workflow.unreadable
    assert (workflow.name, workflow.version, workflow.step) == ("draft", 2, "preview")
    assert kv.get("workflow:5:7")["v"] == 2


def test_only_a_kind_of_the_store_can_be_started(kv: KVStore) -> None:
    with pytest.raises(ValueError, match="not one of this store's kinds"):
        WorkflowStore(kv, DRAFT).start(chat_id=5, user_id=7, name="post", step="a", ttl_ms=1000)


def test_a_kind_refuses_a_migration_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="does not precede"):
        WorkflowKind("bad", version=2, migrations={2: _v2})
    with pytest.raises(ValueError, match="starts at 1"):
        WorkflowKind("bad", version=0)
