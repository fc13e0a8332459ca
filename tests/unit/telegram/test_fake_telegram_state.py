"""The fake Bot API's Telegram-side state: updates, webhook, messages, realistic results."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.telegram import FAKE_TOKEN, FakeTelegram, FakeTelegramServer, FakeTelegramTransport

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def fake() -> FakeTelegram:
    return FakeTelegram(long_poll_cap=1.0)


@pytest.fixture
def bot(fake: FakeTelegram) -> Iterator[Callable[..., Any]]:
    """`bot("sendMessage", chat_id=1, text="x")` -> the decoded answer, in-process."""
    transport = FakeTelegramTransport(fake)
    with httpx.Client(transport=transport, base_url="https://api.telegram.org") as http:

        def call(method: str, **params: Any) -> Any:
            return http.post(f"/bot{FAKE_TOKEN}/{method}", json=params).json()

        yield call


def _result(answer: dict[str, Any]) -> Any:
    assert answer["ok"] is True, answer
    return answer["result"]


# -- getUpdates --------------------------------------------------------------------------------


def test_get_updates_serves_the_queue_and_honours_offset_and_limit(
    fake: FakeTelegram, bot: Any
) -> None:
    for _ in range(3):
        fake.push_update({"message": {"message_id": 1}})
    assert [u["update_id"] for u in _result(bot("getUpdates"))] == [1, 2, 3]
    assert [u["update_id"] for u in _result(bot("getUpdates", limit=2))] == [1, 2]
    assert [u["update_id"] for u in _result(bot("getUpdates", offset=3))] == [3]
    assert [u["update_id"] for u in fake.pending_updates] == [3]  # 1 and 2 confirmed


def test_a_negative_offset_keeps_the_last_updates(fake: FakeTelegram, bot: Any) -> None:
    for update_id in (5, 6, 7):
        fake.push_update({"update_id": update_id, "message": {}})
    assert [u["update_id"] for u in _result(bot("getUpdates", offset=-1))] == [7]
    assert fake.push_update({"message": {}}) == 8


def test_a_long_poll_returns_as_soon_as_an_update_arrives(fake: FakeTelegram, bot: Any) -> None:
    threading.Timer(0.2, fake.push_update, args=({"message": {}},)).start()
    started = time.monotonic()
    updates = _result(bot("getUpdates", timeout=10))
    assert len(updates) == 1
    assert time.monotonic() - started < 1.5


def test_a_long_poll_without_updates_waits_up_to_the_cap(bot: Any) -> None:
    started = time.monotonic()
    assert _result(bot("getUpdates", timeout=30)) == []
    assert 0.9 <= time.monotonic() - started < 2.0  # long_poll_cap=1.0


def test_a_call_still_in_flight_at_a_reset_is_not_recorded_after_it(
    fake: FakeTelegram, bot: Any
) -> None:
    """A long poll left running by an earlier test must not show up in the next one."""
    poll = threading.Thread(target=bot, args=("getUpdates",), kwargs={"timeout": 10})
    poll.start()
    time.sleep(0.2)
    fake.reset()
    poll.join(timeout=3)
    assert fake.calls == []
    _result(bot("getMe"))
    assert [call.method for call in fake.calls] == ["getMe"]


def test_get_updates_conflicts_with_a_webhook(bot: Any) -> None:
    _result(bot("setWebhook", url="https://bot.example.org/hook"))
    answer = bot("getUpdates")
    assert answer["error_code"] == 409
    assert "webhook is active" in answer["description"]


# -- webhook -----------------------------------------------------------------------------------


def test_get_webhook_info_reflects_set_webhook(fake: FakeTelegram, bot: Any) -> None:
    assert _result(bot("getWebhookInfo")) == {
        "url": "",
        "has_custom_certificate": False,
        "pending_update_count": 0,
    }
    fake.push_update({"message": {}})
    _result(
        bot(
            "setWebhook",
            url="https://bot.example.org:8443/hook",
            max_connections=5,
            allowed_updates=["message", "chat_join_request"],
            secret_token="abc_DEF-123",
        )
    )
    fake.set_webhook_error("Wrong response from the webhook: 502 Bad Gateway", date=1700000000)
    assert _result(bot("getWebhookInfo")) == {
        "url": "https://bot.example.org:8443/hook",
        "has_custom_certificate": False,
        "pending_update_count": 1,
        "max_connections": 5,
        "allowed_updates": ["message", "chat_join_request"],
        "last_error_date": 1700000000,
        "last_error_message": "Wrong response from the webhook: 502 Bad Gateway",
    }
    _result(bot("setWebhook", url="https://bot.example.org:8443/hook"))  # keeps allowed_updates
    assert _result(bot("getWebhookInfo"))["allowed_updates"] == ["message", "chat_join_request"]
    _result(bot("deleteWebhook", drop_pending_updates=True))
    assert _result(bot("getWebhookInfo")) == {
        "url": "",
        "has_custom_certificate": False,
        "pending_update_count": 0,
    }


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"url": "http://bot.example.org/hook"}, "HTTPS URL"),
        ({"url": "https://bot.example.org:9000/hook"}, "ports 80, 88, 443 or 8443"),
        ({"url": "https://bot.example.org/hook", "secret_token": "with space"}, "unallowed"),
        ({"url": "https://bot.example.org/hook", "secret_token": "x" * 257}, "too long"),
    ],
)
def test_set_webhook_rejects_what_telegram_rejects(
    bot: Any, params: dict[str, Any], fragment: str
) -> None:
    answer = bot("setWebhook", **params)
    assert answer["error_code"] == 400
    assert fragment in answer["description"]


def test_an_empty_url_removes_the_webhook(fake: FakeTelegram, bot: Any) -> None:
    _result(bot("setWebhook", url="https://bot.example.org/hook"))
    _result(bot("setWebhook", url=""))
    assert fake.webhook is None


# -- messages ----------------------------------------------------------------------------------


def test_message_ids_increase_per_chat(bot: Any) -> None:
    ids = [
        _result(bot("sendMessage", chat_id=chat, text="x"))["message_id"] for chat in (1, 1, 2, 1)
    ]
    assert ids == [1, 2, 1, 3]


@pytest.mark.parametrize(
    ("chat_id", "expected"),
    [
        (42, {"id": 42, "type": "private"}),
        (-42, {"id": -42, "type": "group"}),
        (-1001234, {"id": -1001234, "type": "supergroup"}),
        ("@news", {"type": "channel", "username": "news"}),
    ],
)
def test_the_chat_type_follows_the_id(
    bot: Any, chat_id: int | str, expected: dict[str, Any]
) -> None:
    message = _result(bot("sendMessage", chat_id=chat_id, text="x"))
    assert expected.items() <= message["chat"].items()
    assert ("sender_chat" in message) is (expected["type"] == "channel")
    assert ("from" in message) is (expected["type"] != "channel")


def test_a_chat_can_be_declared_a_channel(fake: FakeTelegram, bot: Any) -> None:
    fake.set_chat(-1009, "channel", title="Announcements")
    message = _result(bot("sendMessage", chat_id=-1009, text="x"))
    assert message["chat"] == {"id": -1009, "type": "channel", "title": "Announcements"}
    assert message["sender_chat"]["id"] == -1009


def test_edits_change_the_stored_message(fake: FakeTelegram, bot: Any) -> None:
    keyboard = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
    sent = _result(bot("sendMessage", chat_id=1, text="v1", reply_markup=keyboard))
    edited = _result(bot("editMessageText", chat_id=1, message_id=sent["message_id"], text="v2"))
    assert edited["text"] == "v2"
    assert "reply_markup" not in edited  # an edit without reply_markup removes the keyboard
    assert "edit_date" in edited
    assert fake.message(1, sent["message_id"]) == edited


def test_an_identical_edit_is_not_modified(bot: Any) -> None:
    sent = _result(bot("sendMessage", chat_id=1, text="same"))
    answer = bot("editMessageText", chat_id=1, message_id=sent["message_id"], text="same")
    assert answer["error_code"] == 400
    assert answer["description"].startswith("Bad Request: message is not modified")


def test_edits_of_inline_and_unknown_messages(bot: Any) -> None:
    assert _result(bot("editMessageReplyMarkup", inline_message_id="abc")) is True
    edited = _result(bot("editMessageText", chat_id=5, message_id=99, text="from an update"))
    assert edited["message_id"] == 99


def test_stop_poll_closes_a_sent_poll(bot: Any) -> None:
    options = [{"text": "Yes"}, {"text": "No"}]
    sent = _result(bot("sendPoll", chat_id=-100, question="Ok?", options=options))
    poll = _result(bot("stopPoll", chat_id=-100, message_id=sent["message_id"]))
    assert poll["is_closed"] is True
    assert poll["id"] == sent["poll"]["id"]
    assert bot("stopPoll", chat_id=-100, message_id=999)["error_code"] == 400


def test_copy_message_returns_a_message_id_and_copies_content(fake: FakeTelegram, bot: Any) -> None:
    source = _result(bot("sendMessage", chat_id=1, text="hello"))
    copied = _result(bot("copyMessage", chat_id=2, from_chat_id=1, message_id=source["message_id"]))
    assert copied == {"message_id": 1}
    stored = fake.message(2, 1)
    assert stored is not None
    assert stored["text"] == "hello"


def test_results_fit_the_spec(fake: FakeTelegram, bot: Any) -> None:
    keyboard = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
    results = {
        "Message": [
            _result(bot("sendMessage", chat_id=1, text="x", reply_markup=keyboard)),
            _result(bot("sendPhoto", chat_id="@pics", photo="file-id", caption="c")),
            _result(bot("sendPoll", chat_id=-5, question="q", options=[{"text": "a"}])),
        ],
        "Poll": [_result(bot("stopPoll", chat_id=-5, message_id=1))],
        "User": [_result(bot("getMe"))],
        "WebhookInfo": [_result(bot("getWebhookInfo"))],
        "MessageId": [_result(bot("copyMessage", chat_id=1, from_chat_id=1, message_id=1))],
    }
    for type_name, values in results.items():
        for value in values:
            assert fake.spec.check(value, [type_name]) is None, (type_name, value)


def test_methods_without_a_handler_get_a_plausible_result(bot: Any) -> None:
    assert _result(bot("pinChatMessage", chat_id=-100, message_id=5)) is True
    assert _result(bot("sendDocument", chat_id=1, document="file-id"))["message_id"] == 1


# -- running it by hand ------------------------------------------------------------------------


def test_the_command_line_server_prints_calls_without_the_token() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.telegram", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        assert f"127.0.0.1:{port}" in process.stdout.readline()
        url = f"http://127.0.0.1:{port}/bot{FAKE_TOKEN}/sendMessage"
        httpx.post(url, json={"chat_id": 3, "text": "hi"}, timeout=5)
        line = process.stdout.readline()
    finally:
        process.terminate()
        process.wait(timeout=5)
    assert "sendMessage 200 chat_id=3 text='hi'" in line
    assert FAKE_TOKEN.split(":")[1] not in line


def test_a_server_stops_promptly_with_a_long_poll_open() -> None:
    server = FakeTelegramServer(long_poll_cap=30.0).start()
    url = f"{server.base_url}/bot{FAKE_TOKEN}/getUpdates"
    poller = threading.Thread(target=_ignore_errors, args=(url,), daemon=True)
    poller.start()
    time.sleep(0.2)
    started = time.monotonic()
    server.stop()
    poller.join(timeout=5)
    assert time.monotonic() - started < 2.0
    assert not poller.is_alive()


def _ignore_errors(url: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(url, json={"timeout": 30}, timeout=10)
