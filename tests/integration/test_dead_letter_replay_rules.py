"""What a replay does with rate limits, chats no longer allowed, permissions and bad links."""

from __future__ import annotations

from typing import Any

import pytest
from cachetools import TTLCache
from django.contrib.auth.models import Permission
from django.test import Client

from telegram_bot.errors import StateError
from telegram_bot.state import KVStore, override_store
from telegram_bot.state.dead_letters import DeadLetterStore
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer


def poison(bot: FakeTelegramServer, post_update: Any, **kwargs: Any) -> dict[str, Any]:
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    update = make_message_update("/start", **kwargs)
    assert post_update(update)["X-Update-Outcome"] == "dead_letter"
    return update


def test_a_replay_is_not_refused_by_the_senders_rate_limit(
    bot: FakeTelegramServer,
    post_update: Any,
    admin_client: Client,
    settings: Any,
    memory_store: KVStore,
) -> None:
    update = poison(bot, post_update, chat_id=7, user_id=7)
    settings.RATE_LIMIT_USER_PER_MINUTE = 1  # the user is over it now
    page = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "replayed: processed" in page.content.decode()
    assert memory_store.get(f"dlq:{update['update_id']}") is None


def test_a_replay_that_is_not_handled_keeps_the_letter(
    bot: FakeTelegramServer,
    post_update: Any,
    admin_client: Client,
    settings: Any,
    memory_store: KVStore,
) -> None:
    update = poison(bot, post_update, chat_id=-100, user_id=7)
    settings.ALLOWED_CHAT_IDS = [-200]  # the chat is not served any more
    page = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "was not handled (ignored)" in page.content.decode()
    assert memory_store.get(f"dlq:{update['update_id']}") is not None


def test_dead_letters_need_their_permission(
    bot: FakeTelegramServer, django_user_model: Any, client: Client
) -> None:
    staff = django_user_model.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/dead-letters/").status_code == 403
    assert client.post("/admin/dead-letters/1/drop/").status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="manage_dead_letters"))
    staff = django_user_model.objects.get(pk=staff.pk)
    client.force_login(staff)
    assert client.get("/admin/dead-letters/").status_code == 200


def test_a_stale_page_link_shows_the_first_page(
    bot: FakeTelegramServer, admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_page = DeadLetterStore.page

    def page(self: DeadLetterStore, cursor: str | None = None, limit: int = 50) -> Any:
        if cursor is not None:
            raise StateError("malformed scan cursor")
        return real_page(self, cursor, limit)

    monkeypatch.setattr(DeadLetterStore, "page", page)
    response = admin_client.get("/admin/dead-letters/?cursor=garbage")
    assert response.status_code == 200
    assert "not valid any more" in response.content.decode()


def test_admin_commands_refuse_non_ascii_digits(bot: FakeTelegramServer, post_update: Any) -> None:
    for text in ("/addadmin ²", "/removeadmin ٣"):
        assert (
            post_update(make_message_update(text, chat_id=1000, user_id=1000))["X-Update-Outcome"]
            == "processed"
        )
    texts = [c.params["text"] for c in bot.calls_to("sendMessage")]
    assert texts == [
        "Usage: /addadmin <user id>\nA Telegram user id is a positive whole number up to "
        "4503599627370495 (for example 123456789).",
        "Usage: /removeadmin <user id>",
    ]


def test_a_failed_get_me_is_not_asked_again_for_every_mention(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from telegram_bot import bot as bot_module

    monkeypatch.setattr(bot_module, "_username", {})
    monkeypatch.setattr(bot_module, "_username_unknown", TTLCache(8, 60.0))
    bot.fail_next("getMe", times=5, status=502, description="Bad Gateway")
    for _ in range(3):
        post_update(make_message_update("/start@some_bot", chat_id=-100, user_id=5))
    assert len(bot.calls_to("getMe")) == 1


FOREIGN_CURSORS = ["activity:", "a", "counter:0", "0:0:activity:1", "stats:x 0 1", "dl"]


@pytest.mark.parametrize("cursor", FOREIGN_CURSORS)
def test_a_page_link_outside_the_dead_letters_is_refused(
    kv: KVStore, admin_client: Client, cursor: str
) -> None:
    """Hand-edited links must not walk other key families (nor crash on their keys)."""
    for key in ("activity:-100:2026-01-01", "counter:x", "stats:x:1", "session:u:1"):
        kv.set(key, 1)
    with override_store(kv):
        DeadLetterStore(kv).put({"update_id": 7, "message": {"text": "hi"}}, RuntimeError("x"))
        response = admin_client.get("/admin/dead-letters/", {"cursor": cursor})
        assert response.status_code == 400
        assert response.content.decode() == "That page link is not valid."
        # The links the page gives out still work on every backend.
        for update_id in range(8, 60):
            DeadLetterStore(kv).put({"update_id": update_id, "message": {}}, RuntimeError("x"))
        first = admin_client.get("/admin/dead-letters/")
        assert first.status_code == 200
        link = first.context["next_cursor"]
        assert link
        second = admin_client.get("/admin/dead-letters/", {"cursor": link})
        assert second.status_code == 200
        shown = [row["update_id"] for row in first.context["rows"] + second.context["rows"]]
        assert sorted(set(shown)) == list(range(7, 60))
