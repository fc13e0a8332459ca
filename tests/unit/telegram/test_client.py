"""TelegramClient.call: request encoding, error mapping, timeouts, secrecy, connections."""

from __future__ import annotations

import io
import socket
import time
import traceback
from collections.abc import Callable

import httpx
import pytest

from telegram_bot.client import TelegramClient
from telegram_bot.errors import RateLimitError, TelegramApiError, TelegramRateLimitError
from tests.fakes.telegram import (
    FAKE_TOKEN,
    FakeTelegram,
    FakeTelegramServer,
    FakeTelegramTransport,
    UploadedFile,
)

SECRET = FAKE_TOKEN.split(":", 1)[1]
MARKUP = {"inline_keyboard": [[{"text": "Open", "callback_data": "ticket:1"}]]}


def _error_of(action: Callable[[], object]) -> TelegramApiError:
    with pytest.raises(TelegramApiError) as caught:
        action()
    return caught.value


# -- requests ----------------------------------------------------------------------------------


def test_it_returns_the_result(client: TelegramClient, fake_telegram: FakeTelegramServer) -> None:
    message = client.call("sendMessage", chat_id=42, text="hello", reply_markup=MARKUP)
    assert message["text"] == "hello"
    assert message["chat"] == {"id": 42, "type": "private", "first_name": "User 42"}
    assert message["reply_markup"] == MARKUP


def test_it_drops_none_params(client: TelegramClient, fake_telegram: FakeTelegramServer) -> None:
    client.call("sendMessage", chat_id=42, text="hi", parse_mode=None, reply_markup=None)
    assert fake_telegram.calls_to("sendMessage")[0].params == {"chat_id": 42, "text": "hi"}


def test_it_uploads_bytes_as_multipart(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    data = b"\x89PNG\r\n--not-a-boundary\r\n\x00\xff"
    message = client.send_photo(chat_id=-100200, photo=data, caption="c", reply_markup=MARKUP)
    params = fake_telegram.calls_to("sendPhoto")[0].params
    assert isinstance(params["photo"], UploadedFile)
    assert params["photo"].data == data
    assert params["chat_id"] == -100200  # form text decoded by the spec's type
    assert params["reply_markup"] == MARKUP  # JSON-serialised in the form, decoded back
    assert message["caption"] == "c"
    assert message["photo"][-1]["file_size"] == len(data)


@pytest.mark.parametrize(
    "photo",
    [
        ("cat.jpg", b"jpeg-bytes", "image/jpeg"),
        ("cat.jpg", b"jpeg-bytes"),
        io.BytesIO(b"jpeg-bytes"),
    ],
)
def test_it_uploads_tuples_and_file_objects(
    client: TelegramClient, fake_telegram: FakeTelegramServer, photo: object
) -> None:
    client.call("sendPhoto", chat_id=1, photo=photo, disable_notification=True)
    params = fake_telegram.calls_to("sendPhoto")[0].params
    assert params["photo"].data == b"jpeg-bytes"
    assert params["disable_notification"] is True


def test_a_photo_file_id_is_sent_as_json(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    message = client.send_photo(chat_id=1, photo="AgACAgIAAxkBAAI")
    assert fake_telegram.calls_to("sendPhoto")[0].params["photo"] == "AgACAgIAAxkBAAI"
    assert message["photo"][-1]["file_id"] == "AgACAgIAAxkBAAI"


def test_a_base_url_path_prefix_is_kept() -> None:
    paths = []

    def answer(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return httpx.Response(200, json={"ok": True, "result": True})

    base_url = "https://proxy.internal/telegram/"
    with TelegramClient(FAKE_TOKEN, base_url, transport=httpx.MockTransport(answer)) as c:
        assert c.delete_webhook() is True
    assert paths == [f"/telegram/bot{FAKE_TOKEN}/deleteWebhook"]
    assert c.base_url == "https://proxy.internal/telegram"


def test_a_call_goes_straight_to_the_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx.Client.send (auth, redirects, cookies, hooks) cost a third of a call's CPU; a
    Bot API call skips it and still sends the client's headers and timeouts."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True, "result": True})

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("sent through httpx.Client.send")

    monkeypatch.setattr(httpx.Client, "send", refuse)
    timeout = httpx.Timeout(5.0, read=7.0)
    with TelegramClient(FAKE_TOKEN, transport=httpx.MockTransport(answer), timeout=timeout) as c:
        assert c.delete_webhook() is True
        assert c.call("deleteWebhook", request_timeout=3.0) is True
    assert [r.headers["User-Agent"] for r in seen] == ["telegram-community-bot"] * 2
    assert seen[0].extensions["timeout"]["read"] == 7.0
    assert seen[1].extensions["timeout"] == httpx.Timeout(3.0).as_dict()


# -- error mapping -----------------------------------------------------------------------------


def test_a_bad_request_is_permanent(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    error = _error_of(lambda: client.send_message(chat_id=1, text="x"))
    assert (error.status, error.error_code) == (400, 400)
    assert error.description == "Bad Request: chat not found"
    assert error.permanent
    assert error.chat_unreachable
    assert error.method == "sendMessage"


def test_a_blocked_chat_is_permanent(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.block_chat(77)
    error = _error_of(lambda: client.send_message(chat_id=77, text="x"))
    assert error.status == 403
    assert error.description == "Forbidden: bot was blocked by the user"
    assert error.permanent
    assert error.chat_unreachable


def test_flood_control_is_a_retryable_rate_limit_with_retry_after(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("sendMessage", status=429, retry_after=7)
    error = _error_of(lambda: client.send_message(chat_id=1, text="x"))
    assert isinstance(error, TelegramRateLimitError)
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 7.0
    assert error.retryable
    assert client.send_message(chat_id=1, text="x")["text"] == "x"  # one fault only


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_retryable(
    client: TelegramClient, fake_telegram: FakeTelegramServer, status: int
) -> None:
    fake_telegram.fail_next("getMe", status=status)
    error = _error_of(client.get_me)
    assert error.status == status
    assert error.retryable


def test_a_migrated_group_keeps_the_new_chat_id(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.migrate_chat(-4001, -1004001)
    error = _error_of(lambda: client.send_message(chat_id=-4001, text="x"))
    assert error.migrate_to_chat_id == -1004001
    assert error.permanent
    assert client.send_message(chat_id=-1004001, text="x")["chat"]["type"] == "supergroup"


def test_unauthorized_and_unknown_methods_are_permanent() -> None:
    with FakeTelegramServer(token="1:only-this-one") as server:
        with TelegramClient(FAKE_TOKEN, server.base_url) as c:
            error = _error_of(c.get_me)
        assert (error.status, error.description, error.retryable) == (401, "Unauthorized", False)
        with TelegramClient("1:only-this-one", server.base_url) as c:
            error = _error_of(lambda: c.call("sendTelepathy"))
        assert (error.status, error.description, error.retryable) == (404, "Not Found", False)


@pytest.mark.parametrize(("status", "retryable"), [(502, True), (400, False), (200, False)])
def test_a_body_that_is_not_json_is_mapped_by_status(
    client: TelegramClient, fake_telegram: FakeTelegramServer, status: int, retryable: bool
) -> None:
    fake_telegram.fail_next("getMe", status=status, raw_body=b"<html>Bad Gateway</html>")
    error = _error_of(client.get_me)
    assert error.status == status
    assert error.retryable is retryable
    assert error.error_code is None


@pytest.mark.parametrize("body", [b'{"result": true}', b"[1, 2]", b'{"ok": "yes"}'])
def test_json_that_is_not_a_bot_api_answer_is_an_error(body: bytes) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    with TelegramClient(FAKE_TOKEN, transport=transport) as c:
        error = _error_of(c.get_me)
    assert error.status == 200
    assert error.permanent


def test_an_unexpected_result_type_is_an_error() -> None:
    answer = b'{"ok": true, "result": "not a user"}'
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=answer))
    with TelegramClient(FAKE_TOKEN, transport=transport) as c:
        assert c.call("getMe") == "not a user"
        error = _error_of(c.get_me)
    assert "unexpected result" in error.description


def test_a_dropped_connection_is_a_retryable_network_error(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("sendMessage", drop_connection=True)
    error = _error_of(lambda: client.send_message(chat_id=1, text="x"))
    assert error.status is None
    assert error.retryable
    assert "RemoteProtocolError" in error.description


def test_a_refused_connection_is_a_retryable_network_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the call: nothing listens
    with TelegramClient(FAKE_TOKEN, f"http://127.0.0.1:{port}") as c:
        error = _error_of(c.get_me)
    assert error.status is None
    assert error.retryable
    assert "ConnectError" in error.description


def test_a_slow_answer_times_out_as_a_retryable_error(fake_telegram: FakeTelegramServer) -> None:
    fake_telegram.delay_next("getMe", 2.0)
    timeout = httpx.Timeout(5.0, read=0.2)
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url, timeout=timeout) as c:
        started = time.monotonic()
        error = _error_of(c.get_me)
        assert time.monotonic() - started < 1.5
    assert error.status is None
    assert error.retryable
    assert "timed out" in error.description


def test_a_per_call_timeout_overrides_the_default(
    client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("getMe", status=500, delay=2.0)
    error = _error_of(lambda: client.call("getMe", request_timeout=0.2))
    assert "ReadTimeout" in error.description
    fake_telegram.delay_next("getMe", 0.3)
    assert client.call("getMe", request_timeout=2.0)["is_bot"] is True


def test_the_in_process_transport_also_times_out() -> None:
    fake = FakeTelegram()
    fake.delay_next("getMe", 5.0)
    timeout = httpx.Timeout(5.0, read=0.1)
    with TelegramClient(FAKE_TOKEN, transport=FakeTelegramTransport(fake), timeout=timeout) as c:
        error = _error_of(c.get_me)
    assert error.retryable
    assert "timed out" in error.description


def test_get_updates_widens_the_read_timeout_for_long_polling(
    fake_telegram: FakeTelegramServer,
) -> None:
    timeout = httpx.Timeout(5.0, read=0.3)
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url, timeout=timeout) as c:
        started = time.monotonic()
        assert c.get_updates(timeout=1) == []  # would time out after 0.3 s otherwise
    assert time.monotonic() - started >= 0.9


# -- secrecy -----------------------------------------------------------------------------------


def _failures(server: FakeTelegramServer) -> list[TelegramApiError]:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    found = []
    server.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    server.fail_next("getMe", status=502, raw_body=b"oops")
    server.fail_next("getMe", drop_connection=True)
    server.delay_next("getMe", 1.0)
    with TelegramClient(FAKE_TOKEN, server.base_url, timeout=httpx.Timeout(2.0, read=0.1)) as c:
        for action in (
            lambda: c.send_message(chat_id=1, text="x"),
            c.get_me,
            c.get_me,
            c.get_me,
            lambda: c.call("noSuchMethod"),
        ):
            found.append(_error_of(action))
    with TelegramClient(FAKE_TOKEN, dead_url) as c:
        found.append(_error_of(c.get_me))
    return found


def test_the_token_never_appears_in_errors(fake_telegram: FakeTelegramServer) -> None:
    for error in _failures(fake_telegram):
        rendered = "".join(traceback.format_exception(error))
        for text in (str(error), repr(error), rendered, repr(error.__dict__)):
            assert SECRET not in text
            assert "/bot" not in text
        assert error.__cause__ is None
        assert error.__context__ is None


def test_the_token_never_appears_in_repr(client: TelegramClient) -> None:
    assert SECRET not in repr(client)
    assert repr(client) == f"TelegramClient(base_url={client.base_url!r}, bot_id=123456789)"


def test_a_malformed_token_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="does not look like") as caught:
        TelegramClient("not-a-token-but-secret-ish")
    assert "secret-ish" not in str(caught.value)


# -- connections -------------------------------------------------------------------------------


def test_calls_reuse_one_connection() -> None:
    with FakeTelegramServer() as server:
        with TelegramClient(FAKE_TOKEN, server.base_url) as c:
            for i in range(5):
                c.send_message(chat_id=1, text=f"m{i}")
            c.send_photo(chat_id=1, photo=b"img")
        assert server.connections_opened == 1
        assert len(server.calls) == 6


def test_close_and_the_context_manager_release_the_connections(
    fake_telegram: FakeTelegramServer,
) -> None:
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url) as c:
        c.get_me()
    with pytest.raises(RuntimeError):
        c.get_me()
