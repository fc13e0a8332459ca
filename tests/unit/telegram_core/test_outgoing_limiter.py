"""The one outgoing limiter (telegram_bot/client/limiter.py): Telegram's limits, the shared
pause after a 429, the bulk share, and the client and fake Bot API wired together."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection

from config.env import ConfigError
from telegram_bot.bot import get_client, outgoing_limiter
from telegram_bot.client import Limits, OutgoingLimiter, TelegramClient, bulk_sends
from telegram_bot.errors import TelegramApiError, TelegramRateLimitError
from telegram_bot.state import KVStore, open_store
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer
from tests.fakes.telegram_limits import TelegramLimits
from tests.unit.config.test_settings import read


class FakeClock:
    """Time that moves only when the limiter sleeps."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limiter(store: KVStore | None = None, **limits: Any) -> tuple[OutgoingLimiter, FakeClock]:
    clock = FakeClock()
    store = store or open_store("memory://")
    return OutgoingLimiter(store, Limits(**limits), clock=clock, sleep=clock.sleep), clock


def test_the_overall_rate_lets_30_through_a_second_then_waits() -> None:
    gate, clock = limiter()
    start = clock.now
    for n in range(30):
        gate.before_send("sendMessage", 100 + n)
    assert clock.now == start  # a burst up to the limit is not held
    gate.before_send("sendMessage", 200)
    assert clock.now == pytest.approx(start + 1.0)  # the 31st waits for the window


def test_one_private_chat_gets_one_a_second_and_a_group_twenty_a_minute() -> None:
    gate, clock = limiter()
    start = clock.now
    for _ in range(3):
        gate.before_send("sendMessage", 42)
    assert clock.now == pytest.approx(start + 2.0)
    gate2, clock2 = limiter(max_wait=120)
    start = clock2.now
    for _ in range(21):
        gate2.before_send("sendMessage", -100123)
    assert clock2.now == pytest.approx(start + 60.0)


def test_a_429_pauses_every_sender_not_only_the_one_that_hit_it() -> None:
    store = open_store("memory://")
    gate, clock = limiter(store)
    gate.rate_limited(3.0)
    other = OutgoingLimiter(store, Limits(), clock=clock, sleep=clock.sleep)
    start = clock.now
    waited = other.before_send("sendMessage", 7)  # another chat, another limiter, same store
    assert waited == pytest.approx(3.0)
    assert clock.now == pytest.approx(start + 3.0)
    gate.rate_limited(1.0)  # a shorter pause does not cut the longer one short
    gate.rate_limited(5.0)
    assert gate.paused_until() == pytest.approx(clock.now + 5.0, abs=0.01)


def test_an_answer_that_would_wait_too_long_is_refused_unsent_and_reserves_nothing() -> None:
    store = open_store("memory://")
    gate, clock = limiter(store, max_wait=2)
    gate.rate_limited(30.0)
    before = store.get_many(["rl:out:all", "rl:out:c:42"])
    with pytest.raises(TelegramRateLimitError) as caught:
        gate.before_send("sendMessage", 42)
    assert caught.value.reached is False  # sending it later is safe
    assert caught.value.retryable and caught.value.retry_after >= 29
    assert store.get_many(["rl:out:all", "rl:out:c:42"]) == before
    assert clock.slept == []


def test_bulk_sends_keep_to_their_share_and_answers_are_not_held_behind_them() -> None:
    gate, clock = limiter(per_second=10, bulk_share=0.5)
    start = clock.now
    with bulk_sends():
        for n in range(10):
            gate.before_send("sendMessage", 1000 + n)
    assert clock.now == pytest.approx(start + 1.0)  # 5 a second: the 6th waited
    now = clock.now
    gate.before_send("sendMessage", 77)  # an answer: room left in the overall window
    assert clock.now == now


def test_a_store_that_fails_refuses_the_send_as_never_sent() -> None:
    class Broken:
        def get_many(self, keys: list[str]) -> list[Any]:
            raise ConnectionError("redis is down")

        def compare_and_set(self, *args: Any, **kwargs: Any) -> bool:
            raise AssertionError("not reached")

    gate = OutgoingLimiter(Broken(), Limits())
    with pytest.raises(TelegramApiError) as caught:
        gate.before_send("sendMessage", 1)
    assert caught.value.reached is False and caught.value.retryable


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OUTGOING_PER_SECOND", "0"),
        ("OUTGOING_PER_SECOND", "many"),
        ("OUTGOING_PRIVATE_CHAT_PER_SECOND", "-1"),
        ("OUTGOING_GROUP_PER_MINUTE", "0"),
        ("OUTGOING_BULK_SHARE_PERCENT", "101"),
        ("OUTGOING_MAX_WAIT_SECONDS", "-5"),
        ("OUTGOING_LIMITS", "perhaps"),
    ],
)
def test_bad_limits_stop_the_start_with_the_setting_named(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        read({name: value})


def test_limits_refuse_nonsense_values() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Limits(per_second=0)
    with pytest.raises(ValueError, match="bulk share"):
        Limits(bulk_share=0)


# --- several senders at once, on every KV backend ---------------------------------------------
def test_threads_with_their_own_limiters_share_one_window(kv: KVStore) -> None:
    """Two limiters on one store (as two processes on one Redis) and four threads: the
    sends' reserved times never put more than the limit in any one-second window."""
    limits = Limits(per_second=20)
    gates = [OutgoingLimiter(kv, limits), OutgoingLimiter(kv, limits)]
    sent: list[float] = []
    lock = threading.Lock()

    def sender(gate: OutgoingLimiter, base: int) -> None:
        try:
            for n in range(15):
                gate.before_send("sendMessage", base + n)
                with lock:
                    sent.append(time.time())
        finally:
            connection.close()  # the database store's connection of this thread

    threads = [
        threading.Thread(target=sender, args=(gates[i % 2], 1000 * (i + 1))) for i in range(4)
    ]
    started = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(sent) == 60
    sent.sort()
    worst = max(sum(1 for t in sent[i:] if t < start + 0.95) for i, start in enumerate(sent))
    assert worst <= 20
    assert time.time() - started >= 2.0  # 60 sends at 20 a second need two full windows


# --- the client and the fake Bot API ------------------------------------------------------------
@pytest.fixture
def paced(bot: FakeTelegramServer, settings: Any) -> FakeTelegramServer:
    settings.OUTGOING_LIMITS = True
    settings.OUTGOING_PER_SECOND = 40
    return bot


def test_the_product_client_stays_under_the_fakes_limits(paced: FakeTelegramServer) -> None:
    # The client paces 40 a second by when it sends; the fake counts by when a request
    # arrives, and four threads' requests can arrive bunched by a few milliseconds (seen once
    # on a busy CI machine: a 429 at 41). The fake allows that jitter, 10 % over the pace.
    limits = TelegramLimits(per_second=44).install(paced)
    client = get_client()
    assert client.limiter is not None and outgoing_limiter() is client.limiter

    def sender(base: int) -> None:
        for n in range(25):
            client.send_message(chat_id=base + n, text="hi")

    threads = [threading.Thread(target=sender, args=(10_000 * (i + 1),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(limits.accepted) == 100
    assert limits.refused == 0
    assert limits.max_in_window <= 44


def test_without_the_limiter_the_fake_refuses_past_the_limits(
    fake_telegram: FakeTelegramServer,
) -> None:
    """The fake's limits can fail: an unpaced client is refused with a 429."""
    limits = TelegramLimits(per_second=5).install(fake_telegram)
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url) as client:
        for n in range(5):
            client.send_message(chat_id=500 + n, text="hi")
        with pytest.raises(TelegramRateLimitError) as caught:
            client.send_message(chat_id=600, text="one too many")
    assert caught.value.retry_after == 1.0 and caught.value.reached is True
    assert limits.refused == 1 and len(limits.accepted) == 5


def test_a_429_from_telegram_pauses_the_next_send_of_another_feature(
    paced: FakeTelegramServer,
) -> None:
    paced.fail_next("sendMessage", status=429, retry_after=1)
    client = get_client()
    with pytest.raises(TelegramRateLimitError):
        client.send_message(chat_id=11, text="first")
    started = time.monotonic()
    client.send_message(chat_id=-100555, text="someone else's send")
    assert time.monotonic() - started >= 0.9
    sends = paced.calls_to("sendMessage")
    assert [c.failed for c in sends] == [True, False]


def test_answers_on_the_update_path_are_paced_per_chat(
    paced: FakeTelegramServer, post_update: Any
) -> None:
    """Two commands from one user within a second: the second answer waits for the private
    chat's window instead of meeting Telegram's 429."""
    from tests.builders import make_message_update

    limits = TelegramLimits(per_second=40, private_per_second=1).install(paced)
    for _ in range(2):
        response = post_update(make_message_update("/help", chat_id=4321, user_id=4321))
        assert response.status_code == 200
    answers = [t for method, chat, t in limits.accepted if chat == "4321"]
    assert len(answers) == 2 and limits.refused == 0
    assert answers[1] - answers[0] >= 0.9
