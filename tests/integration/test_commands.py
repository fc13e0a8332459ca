"""The operator commands set_webhook, delete_webhook and runbot against the fake Bot API server
(real HTTP on loopback), the test database and a memory KV store."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from telegram_bot.bot import get_client
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.router import get_router
from telegram_bot.state import open_store, override_store
from telegram_bot.transport.polling import Poller
from tests.builders import make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer

ROOT = Path(__file__).resolve().parents[2]
URL = "https://bot.example.com/telegram/webhook"


def run(name: str, *args: str) -> tuple[str, str]:
    """call_command with captured output; asserts no secret leaked into either stream."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
    finally:
        assert_no_secrets(out.getvalue() + err.getvalue())
    return out.getvalue(), err.getvalue()


def assert_no_secrets(text: str) -> None:
    token = os.environ["TELEGRAM_BOT_TOKEN"]  # what settings_test configures
    for secret in (token, token.split(":", 1)[1], WEBHOOK_SECRET):
        assert secret not in text


def run_fails(name: str, *args: str) -> str:
    with pytest.raises(CommandError) as info:
        run(name, *args)
    message = str(info.value)
    assert_no_secrets(message)
    return message


def replies(bot: FakeTelegramServer, chat_id: int) -> list[str]:
    return [c.params["text"] for c in bot.calls_to("sendMessage") if c.params["chat_id"] == chat_id]


def poller(**options: Any) -> Poller:
    options.setdefault("sleep", lambda seconds: None)
    options.setdefault("rand", lambda: 0.5)  # no jitter: the delays are exact
    return Poller(
        get_client(), allowed_updates=get_router().allowed_updates, poll_timeout=0, **options
    )


# --- set_webhook --------------------------------------------------------------------------------
def test_set_webhook_registers_url_secret_and_router_update_types(bot: FakeTelegramServer) -> None:
    out, _ = run("set_webhook", URL)
    (call,) = bot.calls_to("setWebhook")
    allowed = get_router().allowed_updates
    assert "message" in allowed
    assert call.params == {"url": URL, "secret_token": WEBHOOK_SECRET, "allowed_updates": allowed}
    assert bot.webhook is not None
    assert bot.webhook["secret_token"] == WEBHOOK_SECRET
    assert len(bot.calls_to("getWebhookInfo")) == 1
    lines = out.splitlines()
    assert f"url: {URL}" in lines
    assert "pending_update_count: 0" in lines
    assert "last_error_message: none" in lines
    assert f"allowed_updates: {', '.join(allowed)}" in lines


def test_set_webhook_prints_pending_updates_and_the_last_error(bot: FakeTelegramServer) -> None:
    run("set_webhook", URL)
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    bot.push_update(make_message_update("/start", chat_id=6, user_id=6))
    bot.set_webhook_error("Wrong response from the webhook: 503 Service Unavailable")
    out, _ = run("set_webhook", URL)
    assert "pending_update_count: 2" in out.splitlines()
    assert (
        "last_error_message: Wrong response from the webhook: 503 Service Unavailable"
        in out.splitlines()
    )


def test_set_webhook_passes_max_connections_and_drop_pending_updates(
    bot: FakeTelegramServer,
) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    out, _ = run("set_webhook", URL, "--max-connections", "10", "--drop-pending-updates")
    params = bot.calls_to("setWebhook")[0].params
    assert params["max_connections"] == 10
    assert params["drop_pending_updates"] is True
    assert bot.pending_updates == []
    assert "pending_update_count: 0" in out.splitlines()
    assert "max_connections: 10" in out.splitlines()


@pytest.mark.parametrize(
    "url",
    ["http://bot.example.com/telegram/webhook", "bot.example.com/hook", "https:///hook", ""],
)
def test_set_webhook_refuses_a_url_that_is_not_https(bot: FakeTelegramServer, url: str) -> None:
    assert "HTTPS" in run_fails("set_webhook", url)
    assert bot.calls == []


@pytest.mark.parametrize("port", ["8080", "0", "00"])
def test_set_webhook_refuses_a_port_telegram_does_not_deliver_to(
    bot: FakeTelegramServer, port: str
) -> None:
    """Port 0 is no port: not read as "none given", so not as 443."""
    error = run_fails("set_webhook", f"https://example.com:{port}/h")
    assert "ports 443, 80, 88 and 8443" in error and f"got {int(port)}" in error
    assert bot.calls == []


@pytest.mark.parametrize("value", ["0", "101", "-5"])
def test_set_webhook_refuses_max_connections_out_of_range(
    bot: FakeTelegramServer, value: str
) -> None:
    assert "1-100" in run_fails("set_webhook", URL, "--max-connections", value)
    assert bot.calls == []


@pytest.mark.parametrize("name", ["TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_BOT_TOKEN"])
def test_set_webhook_refuses_without_secret_or_token(
    bot: FakeTelegramServer, settings: Any, name: str
) -> None:
    setattr(settings, name, "")
    message = run_fails("set_webhook", URL)
    assert name in message
    assert bot.calls == []


def test_a_telegram_error_becomes_a_command_error(bot: FakeTelegramServer) -> None:
    description = "Bad Request: bad webhook: Failed to resolve host: Name or service not known"
    bot.fail_next("setWebhook", status=400, description=description)
    message = run_fails("set_webhook", URL)
    assert description in message
    assert "setWebhook" in message
    assert bot.webhook is None


def test_set_webhook_never_prints_a_secret_put_into_the_url(bot: FakeTelegramServer) -> None:
    out, _ = run("set_webhook", f"https://bot.example.com/hook/{WEBHOOK_SECRET}")
    assert "url: https://bot.example.com/hook/[REDACTED]" in out.splitlines()


# --- delete_webhook -----------------------------------------------------------------------------
def test_delete_webhook_clears_it(bot: FakeTelegramServer) -> None:
    run("set_webhook", URL)
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    out, _ = run("delete_webhook")
    assert bot.calls_to("deleteWebhook")[0].params == {}
    assert bot.webhook is None
    assert "url: (none)" in out.splitlines()
    assert "pending_update_count: 1" in out.splitlines()
    run("delete_webhook", "--drop-pending-updates")
    assert bot.calls_to("deleteWebhook")[1].params == {"drop_pending_updates": True}
    assert bot.pending_updates == []


# --- runbot: handling and the offset ------------------------------------------------------------
def test_runbot_handles_each_update_once_and_confirms_the_offset(bot: FakeTelegramServer) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    last = bot.push_update(make_message_update("/start", chat_id=6, user_id=6))
    out, _ = run("runbot", "--once", "--poll-timeout", "0")
    assert "Handled 2 update(s)." in out
    assert len(replies(bot, 5)) == 1
    assert len(replies(bot, 6)) == 1
    polls = bot.calls_to("getUpdates")
    assert polls[0].params["allowed_updates"] == get_router().allowed_updates
    assert polls[0].params["timeout"] == 0
    assert polls[-1].params["offset"] == last + 1  # confirmed before exiting
    assert bot.pending_updates == []
    out, _ = run("runbot", "--once", "--poll-timeout", "0")
    assert "Handled 0 update(s)." in out
    assert len(bot.calls_to("sendMessage")) == 2


def test_a_second_round_of_the_poller_gets_nothing_new(bot: FakeTelegramServer) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    second = bot.push_update(make_message_update("/start", chat_id=6, user_id=6))
    polling = poller()
    assert polling.run_once() == 2
    assert polling.offset == second + 1
    assert polling.run_once() == 0
    assert bot.calls_to("getUpdates")[0].params.get("offset") is None
    assert bot.calls_to("getUpdates")[1].params["offset"] == second + 1
    assert len(bot.calls_to("sendMessage")) == 2


def test_an_update_handled_while_the_kv_store_is_down_is_not_skipped(
    bot: FakeTelegramServer,
) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    second = bot.push_update(make_message_update("/start", chat_id=6, user_id=6))
    sleeps: list[float] = []
    polling = poller(sleep=sleeps.append)
    with override_store(open_store("redis://127.0.0.1:1/0")):  # nothing listens there
        assert polling.run_once() == 0
    assert bot.calls_to("sendMessage") == []  # and the second update was not started either
    assert polling.offset is None
    assert "unavailable" in (polling.last_problem or "")
    assert polling.run_once() == 2
    assert sleeps == [1.0]  # backed off once before fetching again
    assert bot.calls_to("getUpdates")[1].params.get("offset") is None  # the same offset
    assert len(replies(bot, 5)) == 1
    assert len(replies(bot, 6)) == 1
    assert polling.offset == second + 1
    assert polling.last_problem is None


def test_runbot_once_reports_a_stalled_round_and_the_next_run_handles_it(
    bot: FakeTelegramServer,
) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    with override_store(open_store("redis://127.0.0.1:1/0")):
        assert "could not be handled now (unavailable)" in run_fails(
            "runbot", "--once", "--poll-timeout", "0"
        )
    assert bot.calls_to("sendMessage") == []
    assert len(bot.pending_updates) == 1
    out, _ = run("runbot", "--once", "--poll-timeout", "0")
    assert "Handled 1 update(s)." in out
    assert len(replies(bot, 5)) == 1


def test_a_malformed_update_is_skipped_not_blocking_the_queue(bot: FakeTelegramServer) -> None:
    bot.push_update({"update_id": 50, "message": "not a message"})
    last = bot.push_update(make_message_update("/start", chat_id=5, user_id=5, update_id=51))
    polling = poller()
    assert polling.run_once() == 2
    assert polling.offset == last + 1
    assert len(replies(bot, 5)) == 1
    polling.run_once()
    assert bot.pending_updates == []


# --- runbot: getUpdates errors ------------------------------------------------------------------
def test_get_updates_failing_is_retried_with_exponential_backoff(bot: FakeTelegramServer) -> None:
    bot.fail_next("getUpdates", times=3, status=500)
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    sleeps: list[float] = []
    polling = poller(sleep=sleeps.append)
    assert [polling.run_once() for _ in range(4)] == [0, 0, 0, 1]
    assert sleeps == [1.0, 2.0, 4.0]
    assert polling.failures == 0  # reset by the success
    assert len(replies(bot, 5)) == 1
    bot.fail_next("getUpdates", status=502)
    polling.run_once()
    assert polling.delay == 1.0  # starts over from the base


def test_backoff_has_jitter_and_a_ceiling(bot: FakeTelegramServer) -> None:
    polling = poller(rand=lambda: 1.0)
    for _ in range(12):
        polling._failed("test")
    assert polling.delay == 60.0
    low, high = poller(rand=lambda: 0.0), poller(rand=lambda: 1.0)
    low._failed("test")
    high._failed("test")
    assert (low.delay, high.delay) == (pytest.approx(0.8), pytest.approx(1.2))


def test_a_429_is_honoured_with_retry_after(bot: FakeTelegramServer) -> None:
    bot.fail_next("getUpdates", status=429, retry_after=7)
    sleeps: list[float] = []
    polling = poller(sleep=sleeps.append)
    assert polling.run_once() == 0
    assert polling.run_once() == 0
    assert sleeps == [7.0]


def test_runbot_once_fails_when_get_updates_fails(bot: FakeTelegramServer) -> None:
    bot.fail_next("getUpdates", status=500)
    assert "getUpdates failed" in run_fails("runbot", "--once", "--poll-timeout", "0")


def test_a_webhook_being_set_stops_runbot_with_a_clear_error(bot: FakeTelegramServer) -> None:
    run("set_webhook", URL)
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    message = run_fails("runbot", "--once", "--poll-timeout", "0")
    assert "409" in message
    assert "delete_webhook" in message
    assert "--delete-webhook" in message
    assert bot.calls_to("sendMessage") == []
    out, _ = run("runbot", "--once", "--poll-timeout", "0", "--delete-webhook")
    assert "Webhook deleted." in out
    assert "Handled 1 update(s)." in out
    assert bot.webhook is None
    assert len(replies(bot, 5)) == 1


def test_another_poller_conflict_is_explained(bot: FakeTelegramServer) -> None:
    bot.fail_next(
        "getUpdates",
        status=409,
        description="Conflict: terminated by other getUpdates request; make sure that only one "
        "bot instance is running",
    )
    assert "another poller" in run_fails("runbot", "--once", "--poll-timeout", "0")


def test_a_rejected_token_stops_runbot(bot: FakeTelegramServer) -> None:
    bot.fail_next("getUpdates", status=401, description="Unauthorized")
    message = run_fails("runbot", "--once", "--poll-timeout", "0")
    assert "rejected the bot token" in message
    assert "TELEGRAM_BOT_TOKEN" in message


def test_runbot_refuses_a_bad_poll_timeout(bot: FakeTelegramServer) -> None:
    assert "0-300" in run_fails("runbot", "--once", "--poll-timeout", "-1")
    assert bot.calls == []


# --- runbot: stopping -------------------------------------------------------------------------
def test_stop_finishes_the_update_being_handled_and_starts_no_other(
    bot: FakeTelegramServer,
) -> None:
    first = bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    bot.push_update(make_message_update("/start", chat_id=6, user_id=6))

    def process_then_stop(update: dict[str, Any]) -> Outcome:
        outcome = process_update(update)
        polling.stop()
        return outcome

    polling = poller(process=process_then_stop)
    polling.run()  # returns because of stop()
    assert polling.offset == first + 1
    assert len(replies(bot, 5)) == 1
    assert replies(bot, 6) == []
    polling.confirm()
    assert [u["update_id"] for u in bot.pending_updates] == [first + 1]


def test_stop_from_another_thread_ends_the_loop(bot: FakeTelegramServer) -> None:
    polling = poller()
    polling.poll_timeout = 1
    thread = threading.Thread(target=polling.run)
    thread.start()
    time.sleep(0.2)
    polling.stop()
    thread.join(timeout=3)
    assert not thread.is_alive()


def test_stop_also_cuts_a_backoff_sleep_short(bot: FakeTelegramServer) -> None:
    polling = Poller(get_client(), allowed_updates=["message"], poll_timeout=0)
    polling.delay = 30.0
    timer = threading.Timer(0.2, polling.stop)
    timer.start()
    started = time.monotonic()
    assert polling.run_once() == 0
    assert time.monotonic() - started < 3
    assert bot.calls_to("getUpdates") == []


@pytest.mark.django_db(transaction=True)  # the loop closes stale DB connections between rounds
def test_sigterm_stops_runbot_cleanly(bot: FakeTelegramServer) -> None:
    bot.push_update(make_message_update("/start", chat_id=5, user_id=5))
    before = signal.getsignal(signal.SIGTERM)

    def terminate_after_reply() -> None:
        deadline = time.monotonic() + 5
        while not bot.calls_to("sendMessage") and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # now in the next long poll
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=terminate_after_reply)
    killer.start()
    started = time.monotonic()
    out, _ = run("runbot", "--poll-timeout", "5")
    killer.join()
    assert time.monotonic() - started < 4  # the long poll was cut short
    assert out.splitlines()[-1] == "Stopped."
    assert len(replies(bot, 5)) == 1
    assert bot.pending_updates == []  # confirmed on the way out
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.timeout(30)
def test_runbot_process_exits_0_on_sigterm(bot: FakeTelegramServer, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings_test",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        TELEGRAM_API_BASE_URL=bot.base_url,
    )
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runbot", "--poll-timeout", "5"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert "Polling for" in process.stdout.readline()  # the handlers are installed
        time.sleep(0.3)  # in the long poll by now
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=5)
        assert time.monotonic() - signalled < 3  # the 5 s long poll was cut short
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert out.strip().splitlines()[-1] == "Stopped."
    assert_no_secrets(out + err)
