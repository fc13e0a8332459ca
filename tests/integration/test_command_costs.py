"""What a command and a button press cost in round trips: SQL statements and Bot API calls.

Counts, never timings: each saving on the command path is kept by the count it removed. The
rate-limit exemption of admins that used to cost every interaction a lookup is checked here
too, now that the lookup is made only when it decides something.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from telegram_bot.models import BlockedChat, BotAdmin
from telegram_bot.pipeline import security
from telegram_bot.state import get_store
from tests.builders import make_callback_update, make_message_update
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
USER = 4242


def statements(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries]


def outcome(post_update: Any, update: dict[str, Any]) -> str:
    return str(post_update(update)["X-Update-Outcome"])


def test_a_start_in_private_costs_two_statements_and_one_call(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/start", chat_id=USER + 1, user_id=USER + 1))  # warm
    bot.reset()
    with CaptureQueriesContext(connection) as queries:
        assert outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER)) == (
            "processed"
        )
    # The user wrote, so a chat they had blocked is reachable again; and /start subscribes
    # them to broadcasts (one upsert).
    assert len(statements(queries)) == 2
    assert statements(queries)[0].startswith("DELETE") and "blockedchat" in statements(queries)[0]
    assert (
        statements(queries)[1].startswith("INSERT")
        and "broadcasts_subscriber" in (statements(queries)[1])
    )
    assert [call.method for call in bot.calls] == ["sendMessage"]


def test_a_start_still_unblocks_the_chat_of_its_sender(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BlockedChat.objects.create(chat_id=USER, reason="Forbidden: bot was blocked by the user")
    BlockedChat.objects.create(chat_id=USER + 1, reason="Forbidden: bot was blocked by the user")
    assert outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER)) == (
        "processed"
    )
    assert list(BlockedChat.objects.values_list("chat_id", flat=True)) == [USER + 1]


def test_a_panel_press_costs_one_call_its_answer_in_the_webhook_reply_and_no_statement(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    panel = 1  # the fake numbers each chat's messages from 1: the panel is the first
    bot.reset()
    with CaptureQueriesContext(connection) as queries:
        press = make_callback_update("panel:home", user_id=OWNER_ID, message_id=panel)
        response = post_update(press)
    assert response["X-Update-Outcome"] == "processed"
    assert response.json() == {
        "method": "answerCallbackQuery",
        "callback_query_id": press["callback_query"]["id"],
    }
    assert statements(queries) == []
    # The product made one call; Telegram (the fake, from the answer) made the other.
    assert [call.method for call in bot.calls] == ["editMessageText", "answerCallbackQuery"]


def test_an_admin_from_the_database_over_the_user_limit_is_not_refused(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_USER_PER_MINUTE = 1
    BotAdmin.objects.create(telegram_id=USER)
    outcomes = [
        outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER))
        for _ in range(3)
    ]
    assert outcomes == ["processed"] * 3


def test_a_user_over_the_limit_is_refused_after_the_admin_lookup(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_USER_PER_MINUTE = 1
    assert outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER)) == (
        "processed"
    )
    with CaptureQueriesContext(connection) as queries:
        assert outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER)) == (
            "refused"
        )
    assert any("botadmin" in sql for sql in statements(queries))


def test_an_admins_group_commands_use_none_of_the_chats_budget(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.RATE_LIMIT_CHAT_PER_MINUTE = 1
    BotAdmin.objects.create(telegram_id=USER)
    for _ in range(3):
        assert outcome(post_update, make_message_update("/help", chat_id=-100, user_id=USER)) == (
            "processed"
        )
    assert outcome(post_update, make_message_update("/help", chat_id=-100, user_id=USER + 1)) == (
        "processed"
    )
    assert outcome(post_update, make_message_update("/help", chat_id=-100, user_id=USER + 2)) == (
        "refused"
    )


def test_the_admins_view_reads_the_admin_rows_once_until_they_change(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    BotAdmin.objects.create(telegram_id=USER)
    presses = [
        make_callback_update(view, user_id=OWNER_ID, message_id=1)
        for view in ("panel:admins", "panel:home", "panel:admins")
    ]
    with CaptureQueriesContext(connection) as queries:
        assert [outcome(post_update, press) for press in presses] == ["processed"] * 3
    assert len([sql for sql in statements(queries) if "botadmin" in sql]) == 1
    assert f"{USER} (added)" in bot.calls_to("editMessageText")[-1].params["text"]
    BotAdmin.objects.create(telegram_id=USER + 1)  # saved here: the list is read again
    assert outcome(post_update, presses[0] | {"update_id": 10**9}) == "processed"
    assert f"{USER + 1} (added)" in bot.calls_to("editMessageText")[-1].params["text"]


def test_who_may_press_an_admin_button_is_not_decided_on_the_cached_list(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=USER)
    post_update(make_message_update("/panel", chat_id=USER, user_id=USER))
    press = make_callback_update("panel:admins", user_id=USER, message_id=1)
    assert outcome(post_update, press) == "processed"
    BotAdmin.objects.filter(telegram_id=USER).update(telegram_id=USER + 1)  # no signal
    again = make_callback_update("panel:admins", user_id=USER, message_id=1)
    assert outcome(post_update, again) == "refused"


def test_the_owners_presses_count_against_no_window(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    press = make_callback_update("panel:home", user_id=OWNER_ID, message_id=1)
    assert outcome(post_update, press) == "processed"
    assert get_store().get(f"rl:u:{OWNER_ID}:{security._window()}") is None
    assert outcome(post_update, make_message_update("/start", chat_id=USER, user_id=USER)) == (
        "processed"
    )
    assert get_store().get(f"rl:u:{USER}:{security._window()}") == 1


def test_a_command_takes_its_rate_window_with_the_claim(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The sender's window counter goes in the claim's KV step (no increment of its own); a
    re-delivery counts nothing, and the window still refuses past its limit."""
    store = get_store()
    increments: list[str] = []
    real_increment = type(store).increment

    def counting(self: Any, key: str, *args: Any, **kwargs: Any) -> int:
        increments.append(key)
        return real_increment(self, key, *args, **kwargs)

    monkeypatch.setattr(type(store), "increment", counting)
    monkeypatch.setattr(security, "_window", lambda: 29_000_000)  # no minute turns mid-test
    start = make_message_update("/start", chat_id=USER, user_id=USER)
    assert outcome(post_update, start) == "processed"
    assert outcome(post_update, start) == "duplicate"
    assert increments == []
    window = security._user_window_key(USER, 29_000_000)
    assert store.get(window) == 1

    settings.RATE_LIMIT_USER_PER_MINUTE = 2
    second = make_message_update("/start", chat_id=USER, user_id=USER)
    third = make_message_update("/start", chat_id=USER, user_id=USER)
    assert [outcome(post_update, second), outcome(post_update, third)] == [
        "processed",
        "refused",
    ]
    assert store.get(window) == 3
