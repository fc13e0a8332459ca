"""TelegramClient.call: request encoding, error mapping, timeouts, secrecy, connections, and
whether a failed call may have reached Telegram (what ``send_once`` decides on)."""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from telegram_bot.client import TelegramClient, telegram_error
from telegram_bot.client.core import CONNECT_RETRIES
from telegram_bot.delivery import send_once
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


def test_a_call_sends_the_clients_headers_and_timeouts() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ok": True, "result": True})

    timeout = httpx.Timeout(5.0, read=7.0)
    with TelegramClient(FAKE_TOKEN, transport=httpx.MockTransport(answer), timeout=timeout) as c:
        assert c.delete_webhook() is True
        assert c.call("deleteWebhook", request_timeout=3.0) is True
    assert [r.headers["User-Agent"] for r in seen] == ["telegram-community-bot"] * 2
    assert [r.method for r in seen] == ["POST", "POST"]
    assert seen[0].extensions["timeout"] == timeout.as_dict()
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


# -- connections of the default transport (httpx's own) -----------------------------------------
OK = b'{"ok":true,"result":true}'


def answer(body: bytes = OK, *, chunked: bool = False, close: bool = False) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    if close:
        head += b"Connection: close\r\n"
    if chunked:
        return head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    return head + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@contextmanager
def raw_server(serve: Callable[[socket.socket, int], None]) -> Iterator[tuple[str, list[int]]]:
    """A loopback server calling ``serve(connection, n)`` for its n-th accepted connection;
    yields its URL and the list of accepted connection numbers."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(len(accepted))
            threading.Thread(target=serve, args=(conn, accepted[-1]), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def read_request(conn: socket.socket) -> bytes:
    """One request's head (its body read and dropped); b"" once the client hung up."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        ),
        0,
    )
    while len(rest) < length:
        rest += conn.recv(65536)
    return head


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again before the call: nothing listens


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    closed = threading.Event()

    def serve(conn: socket.socket, n: int) -> None:
        with conn:  # one answer per connection, then the server closes it (an idle timeout)
            if read_request(conn):
                conn.sendall(answer())
        closed.set()

    with raw_server(serve) as (url, accepted), TelegramClient(FAKE_TOKEN, url) as client:
        assert client.call("sendChatAction", chat_id=1, action="typing") is True
        assert closed.wait(5)
        assert client.call("sendChatAction", chat_id=1, action="typing") is True  # not lost
    assert accepted == [0, 1]


def test_a_chunked_answer_is_read_and_its_connection_kept() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            while read_request(conn):
                conn.sendall(answer(chunked=True))

    with raw_server(serve) as (url, accepted), TelegramClient(FAKE_TOKEN, url) as client:
        for _ in range(3):
            assert client.call("sendChatAction", chat_id=1, action="typing") is True
    assert accepted == [0]


def test_connection_close_from_the_server_opens_a_new_one() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            if read_request(conn):
                conn.sendall(answer(close=True))

    with raw_server(serve) as (url, accepted), TelegramClient(FAKE_TOKEN, url) as client:
        for _ in range(2):
            assert client.call("sendChatAction", chat_id=1, action="typing") is True
    assert accepted == [0, 1]


def test_threads_share_the_clients_connections() -> None:
    with FakeTelegramServer() as server, TelegramClient(FAKE_TOKEN, server.base_url) as client:
        threads = [
            threading.Thread(
                target=lambda n=n: [client.send_message(chat_id=n, text=str(i)) for i in range(5)]
            )
            for n in range(1, 5)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sent = sorted(
            (c.params["chat_id"], c.params["text"]) for c in server.calls_to("sendMessage")
        )
        assert sent == [(n, str(i)) for n in range(1, 5) for i in range(5)]
        assert server.connections_opened <= 4


def test_a_refused_connection_is_tried_again_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx's transport retries connecting (``CONNECT_RETRIES``), which sends nothing twice."""
    attempts: list[object] = []
    connect = socket.create_connection

    def counted(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        attempts.append(address)
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", counted)
    with TelegramClient(FAKE_TOKEN, f"http://127.0.0.1:{closed_port()}") as client:
        error = _error_of(client.get_me)
    assert len(attempts) == 1 + CONNECT_RETRIES == 2
    assert error.reached is False


# -- did the request leave this machine? (what send_once decides on) ----------------------------
def _outcome(action: Callable[[], object]) -> str:
    return send_once(
        action,
        sent=lambda value: "sent",
        refused=lambda exc: "refused",
        unknown=lambda why, exc: "unknown",
    )


def test_nothing_listening_is_a_refusal_that_reached_nothing() -> None:
    with TelegramClient(FAKE_TOKEN, f"http://127.0.0.1:{closed_port()}") as client:
        assert _outcome(lambda: client.send_message(chat_id=1, text="hello")) == "refused"


def test_no_free_connection_in_the_pool_is_a_refusal_that_reached_nothing(
    fake_telegram: FakeTelegramServer,
) -> None:
    """All the pool's connections busy past the pool timeout: the call never went out."""
    transport = httpx.HTTPTransport(limits=httpx.Limits(max_connections=1))
    timeout = httpx.Timeout(5.0, pool=0.2)
    fake_telegram.delay_next("getMe", 1.0)
    with TelegramClient(
        FAKE_TOKEN, fake_telegram.base_url, transport=transport, timeout=timeout
    ) as client:
        slow = threading.Thread(target=client.get_me)
        slow.start()
        deadline = time.monotonic() + 5
        while not fake_telegram.calls_to("getMe") and time.monotonic() < deadline:
            time.sleep(0.01)  # until the slow call holds the one connection
        outcome = _outcome(lambda: client.send_message(chat_id=1, text="hello"))
        slow.join()
    assert outcome == "refused"
    assert fake_telegram.calls_to("sendMessage") == []


def test_a_server_closing_without_an_answer_is_unknown() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            read_request(conn)  # and hang up

    with raw_server(serve) as (url, _accepted), TelegramClient(FAKE_TOKEN, url) as client:
        assert _outcome(lambda: client.send_message(chat_id=1, text="hello")) == "unknown"


def test_a_connection_reset_after_the_request_is_unknown() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        read_request(conn)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # RST: a ReadError on the client

    with raw_server(serve) as (url, _accepted), TelegramClient(FAKE_TOKEN, url) as client:
        assert _outcome(lambda: client.send_message(chat_id=1, text="hello")) == "unknown"


def test_a_read_timeout_is_unknown(fake_telegram: FakeTelegramServer) -> None:
    fake_telegram.delay_next("sendMessage", 1.0)
    timeout = httpx.Timeout(5.0, read=0.1)
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url, timeout=timeout) as client:
        assert _outcome(lambda: client.send_message(chat_id=1, text="hello")) == "unknown"


# -- TLS: the Bot API is reached over HTTPS; the certificate and name are verified --------------
@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str, list[int]]]:
    """A loopback HTTPS server with a self-signed certificate for ``localhost``: (port, the
    certificate's file, the list of connections that completed the handshake)."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    handshakes: list[int] = []

    def serve(conn: socket.socket) -> None:
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                handshakes.append(1)
                while read_request(tls):  # type: ignore[arg-type]
                    tls.sendall(answer())
        except (OSError, ssl.SSLError):
            return  # a client that refused the certificate hangs up during the handshake

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    try:
        yield listener.getsockname()[1], str(cert), handshakes
    finally:
        listener.close()


def test_https_calls_go_through_a_verified_connection_and_keep_it(
    tls_server: tuple[int, str, list[int]],
) -> None:
    import ssl

    port, cert, handshakes = tls_server
    before = len(handshakes)
    transport = httpx.HTTPTransport(verify=ssl.create_default_context(cafile=cert))
    with TelegramClient(FAKE_TOKEN, f"https://localhost:{port}", transport=transport) as c:
        for _ in range(2):
            assert c.call("getMe") is True
    assert len(handshakes) - before == 1  # one connection, reused


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_a_certificate_not_trusted_or_for_another_name_is_refused_before_anything_is_sent(
    tls_server: tuple[int, str, list[int]], host: str
) -> None:
    import ssl

    port, cert, _ = tls_server
    # localhost: the system's trust store, which lacks the test certificate; 127.0.0.1:
    # trusted, but the certificate names localhost only.
    transport = (
        None
        if host == "localhost"
        else httpx.HTTPTransport(verify=ssl.create_default_context(cafile=cert))
    )
    with TelegramClient(FAKE_TOKEN, f"https://{host}:{port}", transport=transport) as c:
        error = _error_of(c.get_me)
    assert "ConnectError" in error.description
    assert error.reached is False


@pytest.mark.parametrize(
    ("cause", "reached"),
    [
        (httpx.ConnectError("refused"), False),
        (httpx.ConnectTimeout("slow connect"), False),
        (httpx.PoolTimeout("no connection free"), False),
        (httpx.ProxyError("tunnel refused"), False),
        (httpx.UnsupportedProtocol("ftp"), False),
        (httpx.WriteError("broken pipe"), None),  # part of it may have gone out
        (httpx.WriteTimeout("slow write"), None),
        (httpx.ReadError("reset"), None),
        (httpx.ReadTimeout("no answer"), None),
        (httpx.RemoteProtocolError("closed without an answer"), None),
        (httpx.LocalProtocolError("bad body length"), None),
    ],
)
def test_httpx_errors_say_whether_the_request_left(cause: Exception, reached: bool | None) -> None:
    assert telegram_error("sendMessage", cause=cause).reached is reached
