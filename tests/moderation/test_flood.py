"""Anti-flood: the message over the limit triggers the chat's action once; admins are exempt;
a group message pays no KV round trip of its own for it (its counter goes with the update's
claim), one where the claim was not a plain one; statistics still count every message."""

from __future__ import annotations

import time
from typing import Any

import pytest

from moderation import flood
from moderation.models import ChatSettings
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.process import Outcome, Plan, process_update
from telegram_bot.pipeline.router import get_router
from telegram_bot.pipeline.security import Sender
from telegram_bot.state import KVStore, override_store
from telegram_bot.updates import parse_update
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    DELETER,
    GROUP,
    MEMBER,
    answers,
    describe_group,
    member_message,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0


@pytest.fixture(autouse=True)
def frozen_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # One window for the whole test: a boundary crossed mid-test would restart the count.
    monkeypatch.setattr(flood, "clock", lambda: NOW)


def chatter(user_id: int = MEMBER, name: str = "Mallory", times: int = 1) -> None:
    for _ in range(times):
        run({"update_id": next_update_id(), "message": member_message(user_id, name)})


def test_the_message_over_the_limit_mutes_for_ten_minutes_once(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    chatter(times=8)
    assert bot.calls_to("restrictChatMember") == []
    chatter(times=4)
    [restrict] = ok_calls(bot, "restrictChatMember")
    assert restrict.params["user_id"] == MEMBER
    assert restrict.params["until_date"] - int(time.time()) in range(590, 601)
    assert answers(bot) == ["Mallory is muted for 10m: flooding"]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.source, entry.reason) == ("mute", "auto", "flooding")


def test_admins_are_exempt(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    chatter(DELETER, "Del", times=12)
    assert bot.calls_to("restrictChatMember") == [] and answers(bot) == []


def test_the_chats_own_limit_and_action(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatSettings.objects.create(
        chat_id=GROUP, flood_messages=3, flood_action="ban", flood_action_seconds=3600
    )
    chatter(times=4)
    assert [c.params["user_id"] for c in ok_calls(bot, "banChatMember")] == [MEMBER]
    assert answers(bot) == ["Mallory is banned for 1h: flooding"]


def test_anti_flood_can_be_turned_off(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatSettings.objects.create(chat_id=GROUP, flood_action="none")
    chatter(times=20)
    assert bot.calls_to("restrictChatMember") == []


class CountingStore:
    """A KV store that counts the calls made to it (each is one round trip)."""

    def __init__(self, store: KVStore) -> None:
        self.store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if callable(attribute):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                return attribute(*args, **kwargs)

            return counted
        return attribute


def test_one_kv_round_trip_on_a_group_message(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    describe_group(bot)
    ChatSettings.objects.create(chat_id=GROUP)
    from moderation.conf import chat_settings

    chat_settings(GROUP)  # the settings cache is warm on a busy chat
    store = CountingStore(memory_store)
    update = parse_update({"update_id": next_update_id(), "message": member_message()})
    ctx = Context(update, Sender(MEMBER), get_router(), store, None)  # type: ignore[arg-type]
    # Not counted with a claim (a take-over): the pipeline counts from the declaration.
    pipeline._declare(ctx, Plan.of(update, get_router()), flood.foresee_flood)
    flood.check_flood(ctx)
    assert store.calls == ["increment"]


def flood_counts(store: KVStore) -> list[int]:
    return [store.get(key) for key in store.scan_all(f"mod:fl:{GROUP}:{MEMBER}:")]


def test_the_counter_goes_with_the_claim_in_one_store_call(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    describe_group(bot)
    store = CountingStore(memory_store)
    with override_store(store):  # type: ignore[arg-type]
        update = {"update_id": next_update_id(), "message": member_message()}
        assert process_update(update) == Outcome.PROCESSED
    assert "increment" not in store.calls and "apply_once" not in store.calls
    # The claim, the counter, the statistics' commit and the done-marker: one step.
    assert store.calls.count("claim_or_finish") == 1
    assert "set_if_absent_and_increment" not in store.calls
    assert flood_counts(memory_store) == [1]


def test_a_redelivered_message_is_not_counted_again(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    describe_group(bot)
    update = {"update_id": next_update_id(), "message": member_message()}
    assert process_update(update) == Outcome.PROCESSED
    assert process_update(update) == Outcome.DUPLICATE
    assert flood_counts(memory_store) == [1]


def test_a_replay_counts_in_the_observer(bot: FakeTelegramServer, memory_store: KVStore) -> None:
    """A replay's claim is not a plain one (compare-and-set over the letter's marker): the
    observer increments the counter itself, once."""
    describe_group(bot)
    store = CountingStore(memory_store)
    with override_store(store):  # type: ignore[arg-type]
        update = {"update_id": next_update_id(), "message": member_message()}
        assert process_update(update, replay=True) == Outcome.PROCESSED
    assert store.calls.count("increment") == 1
    assert "set_if_absent_and_increment" not in store.calls
    assert flood_counts(memory_store) == [1]


def test_a_message_from_a_chat_not_served_counts_nothing(
    bot: FakeTelegramServer, memory_store: KVStore, settings: Any
) -> None:
    describe_group(bot)
    settings.ALLOWED_CHAT_IDS = [GROUP - 1]
    assert run({"update_id": next_update_id(), "message": member_message()}) == Outcome.IGNORED
    assert flood_counts(memory_store) == []


def test_a_command_for_another_bot_counts_nothing(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    """Refused whole (it is not ours): no observer runs, and nothing was counted with the
    claim either (a command addressed by name is never counted there)."""
    describe_group(bot)
    message = member_message()
    message["text"] = "/stats@some_other_bot"
    message["entities"] = [{"type": "bot_command", "offset": 0, "length": 21}]
    assert run({"update_id": next_update_id(), "message": message}) == Outcome.IGNORED
    assert flood_counts(memory_store) == []


def test_statistics_still_count_the_message(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    names = [observer.name for observer in get_router().observers]
    assert names.index("mod.flood") < names.index("stats.count")
    chatter(times=9)  # the ninth is flooding and gets the member muted
    from stats.keys import ACTIVITY
    from telegram_bot.state import get_store

    store = get_store()
    counters = [store.get(key) for key in store.scan_all(ACTIVITY) if str(GROUP) in key]
    assert sum(counters) == 9  # every message, the flooding one included


def test_a_forged_supergroup_with_a_positive_id_is_not_acted_on(
    bot: FakeTelegramServer, memory_store: KVStore
) -> None:
    """A body calling chat 1000 a supergroup (a private chat's id: groups have negative ids).
    Before, the message over the limit asked Telegram for that chat's admins, which answers
    400 (found by the hostile-updates test on CI). Now: no counter, no call, no action."""
    describe_group(bot)
    for _ in range(12):
        message = member_message()
        message["chat"] = {"id": 1000, "type": "supergroup", "title": "forged"}
        assert run({"update_id": next_update_id(), "message": message}) == Outcome.PROCESSED
    assert [c for c in bot.calls if c.failed] == []
    assert bot.calls_to("getChatAdministrators") == [] and answers(bot) == []
    assert list(memory_store.scan_all("mod:fl:")) == []
