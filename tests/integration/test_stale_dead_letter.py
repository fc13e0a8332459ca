"""A dead letter whose marking failed, its update handled later by a re-delivery, is dropped
then: its replay repeated the update. The test failed on the code before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in
from tests.support.helpers import sent


# --- (5) a dead letter that outlives its update -----------------------------------------------
def test_a_dead_letter_whose_mark_failed_is_not_replayed_after_its_update_was_processed(
    bot: FakeTelegramServer,
    post_update: Any,
    admin_client: Any,
    memory_store: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/start fails (Telegram 400): the letter is written, then marking the update dead meets
    a KV blip (503). Telegram re-delivers it and it is processed: the user got their answer.
    Before, the letter stayed listed; replayed once the done-marker had expired (48 h, the
    letter lives DEAD_LETTER_RETENTION_DAYS), it answered /start again (no unit marker
    stopped it): the user got the reply twice."""
    from telegram_bot.errors import StateUnavailableError
    from telegram_bot.pipeline import idempotency
    from tests.builders import make_message_update

    fail_once_in(monkeypatch, idempotency, "mark_dead", StateUnavailableError("redis went away"))
    chat = 4321
    update = make_message_update("/start", chat_id=chat, user_id=chat)
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    assert post_update(update).status_code == 503
    # The 503 gave the claim and the letter up: Telegram's re-delivery handles the update.
    assert memory_store.get(f"dlq:{update['update_id']}") is None
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert len(sent(bot, chat_id=chat)) == 1  # the answer arrived
    # Two days later (UPDATE_DONE_TTL_HOURS) the done-marker is gone; the letter is kept for
    # DEAD_LETTER_RETENTION_DAYS and an operator replays it.
    idempotency.forget(memory_store, update["update_id"])
    admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert len(sent(bot, chat_id=chat)) == 1, "the replay of the stale letter answered again"
