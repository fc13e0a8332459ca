"""/forgetme: a member erases their own data from a private chat, after a confirmation button,
exactly once under re-delivery and double presses."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import telegram_bot.privacy.handlers as handlers
from stats import write_behind
from stats.models import DailyUserStat
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline.process import Outcome, dead_letters, process_update
from telegram_bot.privacy import ERASE_ACTION
from telegram_bot.state import KVStore
from tests.builders import make_callback_update, make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.privacy.seed import CHATS, OTHER, USER, chat_totals, group_message, traces

pytestmark = pytest.mark.django_db(transaction=True)


def ask(bot: FakeTelegramServer) -> tuple[str, str]:
    """Send /forgetme privately; the Erase and Cancel buttons' data."""
    assert process_update(make_message_update("/forgetme", chat_id=USER, user_id=USER)) == (
        Outcome.PROCESSED
    )
    prompt = bot.calls_to("sendMessage")[-1].params
    assert prompt["chat_id"] == USER
    [[erase], [cancel]] = prompt["reply_markup"]["inline_keyboard"]
    return erase["callback_data"], cancel["callback_data"]


def press(data: str, update_id: int | None = None) -> dict[str, Any]:
    return make_callback_update(data, user_id=USER, update_id=update_id)


def counted(store: KVStore) -> None:
    for chat_id in CHATS:
        for user_id in (USER, OTHER):
            process_update(group_message(user_id, chat_id, "some words"))
    write_behind.flush()  # their database adds land with the epoch (stats/write_behind.py)


def alerts(bot: FakeTelegramServer) -> list[str]:
    return [c.params.get("text", "") for c in bot.calls_to("answerCallbackQuery")]


def test_the_confirmed_member_is_erased_once_and_told(
    store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    counted(store)
    totals = chat_totals()
    erase, _cancel = ask(fake_telegram)
    confirm = press(erase)
    assert process_update(confirm) == Outcome.PROCESSED
    assert traces(store) == {}
    assert chat_totals() == totals
    [entry] = AuditEntry.objects.filter(action=ERASE_ACTION)
    assert entry.update_id == confirm["update_id"] and entry.source == "button"
    edited = fake_telegram.calls_to("editMessageText")[-1].params
    assert "erased" in edited["text"]

    assert process_update(confirm) == Outcome.DUPLICATE  # Telegram re-delivers it
    assert process_update(press(erase)) == Outcome.PROCESSED  # pressed again later
    assert alerts(fake_telegram)[-1].startswith("Nothing to confirm")
    assert AuditEntry.objects.filter(action=ERASE_ACTION).count() == 1


def test_cancel_erases_nothing(store: KVStore, fake_telegram: FakeTelegramServer) -> None:
    counted(store)
    erase, cancel = ask(fake_telegram)
    assert process_update(press(cancel)) == Outcome.PROCESSED
    assert process_update(press(erase)) == Outcome.PROCESSED
    assert alerts(fake_telegram)[-1].startswith("Nothing to confirm")
    assert DailyUserStat.objects.filter(user_id=USER).count() == 2
    assert not AuditEntry.objects.filter(action=ERASE_ACTION).exists()


def test_someone_else_cannot_press_the_member_s_button(
    store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    counted(store)
    erase, _cancel = ask(fake_telegram)
    process_update(make_callback_update(erase, user_id=OTHER))
    assert DailyUserStat.objects.filter(user_id=USER).count() == 2
    assert not AuditEntry.objects.filter(action=ERASE_ACTION).exists()


def test_two_presses_at_once_erase_once(
    store: KVStore, fake_telegram: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted(store)
    erase, _cancel = ask(fake_telegram)
    calls = []
    real = handlers.erase_user

    def slow_erase(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["update_id"])
        time.sleep(0.3)  # the other press arrives while this one erases
        return real(*args, **kwargs)

    monkeypatch.setattr(handlers, "erase_user", slow_erase)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def run(update: dict[str, Any]) -> None:
        from django.db import connection

        barrier.wait()
        try:
            outcomes.append(process_update(update))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(press(erase),)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes == [Outcome.PROCESSED, Outcome.PROCESSED]
    assert len(calls) == 1
    assert "Your data is being erased already." in alerts(fake_telegram)
    assert AuditEntry.objects.filter(action=ERASE_ACTION).count() == 1
    assert traces(store) == {}


def test_a_press_whose_erasure_failed_half_way_finishes_it_when_replayed(
    store: KVStore, fake_telegram: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stats.privacy

    counted(store)
    totals = chat_totals()
    erase, _cancel = ask(fake_telegram)
    real_move = stats.privacy.move_day
    moves: list[int] = []

    def move_once_then_fail(*args: Any) -> int:
        if moves:
            raise RuntimeError("the database went away")
        moves.append(1)
        return real_move(*args)

    monkeypatch.setattr(stats.privacy, "move_day", move_once_then_fail)
    confirm = press(erase)
    assert process_update(confirm) == Outcome.DEAD_LETTER
    monkeypatch.setattr(stats.privacy, "move_day", real_move)
    letter = dead_letters().get(confirm["update_id"])
    assert letter is not None
    assert process_update(letter.update, replay=True) == Outcome.PROCESSED
    dead_letters().drop(confirm["update_id"])
    assert traces(store) == {}
    assert chat_totals() == totals
    assert AuditEntry.objects.filter(action=ERASE_ACTION).count() == 1


def test_forgetme_is_private_only(store: KVStore, fake_telegram: FakeTelegramServer) -> None:
    process_update(make_message_update("/forgetme", chat_id=CHATS[0], user_id=USER))
    assert fake_telegram.calls_to("sendMessage") == []


def test_a_press_too_old_to_answer_still_erases(
    store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    counted(store)
    erase, _cancel = ask(fake_telegram)
    fake_telegram.fail_next(
        "answerCallbackQuery",
        status=400,
        description="Bad Request: query is too old and response timeout expired",
    )
    assert process_update(press(erase)) == Outcome.PROCESSED
    assert traces(store) == {}
    assert "erased" in fake_telegram.calls_to("editMessageText")[-1].params["text"]
