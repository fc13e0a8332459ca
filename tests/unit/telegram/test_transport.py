"""KeepAliveTransport, the client's default transport: kept-alive connections, a server's
closing of an idle one, chunked bodies, and httpx's errors for what fails where."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

from telegram_bot.client import TelegramClient
from telegram_bot.client.transport import KeepAliveTransport
from telegram_bot.errors import TelegramApiError
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer

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
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:  # the client closed a half-read answer's connection
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


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:  # one answer per connection, then the server closes it (an idle timeout)
            if read_request(conn):
                conn.sendall(answer())

    with (
        raw_server(serve) as (url, accepted),
        TelegramClient(FAKE_TOKEN, url) as client,
    ):
        assert client.call("sendChatAction", chat_id=1, action="typing") is True
        threading.Event().wait(0.1)  # the server's close arrives
        assert client.call("sendChatAction", chat_id=1, action="typing") is True
    assert accepted == [0, 1]


def test_a_chunked_answer_is_read_and_its_connection_kept() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            while read_request(conn):
                conn.sendall(answer(chunked=True))

    with (
        raw_server(serve) as (url, accepted),
        TelegramClient(FAKE_TOKEN, url) as client,
    ):
        for _ in range(3):
            assert client.call("sendChatAction", chat_id=1, action="typing") is True
    assert accepted == [0]


def test_connection_close_from_the_server_opens_a_new_one() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            if read_request(conn):
                conn.sendall(answer(close=True))

    with (
        raw_server(serve) as (url, accepted),
        TelegramClient(FAKE_TOKEN, url) as client,
    ):
        for _ in range(2):
            assert client.call("sendChatAction", chat_id=1, action="typing") is True
    assert accepted == [0, 1]


def test_an_answer_not_read_to_the_end_closes_its_connection() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            while read_request(conn):
                try:
                    conn.sendall(answer(b"x" * 200_000))
                except OSError:  # the client stopped reading and closed
                    return

    transport = KeepAliveTransport()
    with raw_server(serve) as (url, accepted), httpx.Client(transport=transport) as http:
        with http.stream("GET", url + "/file") as response:
            next(response.iter_raw(10))
        assert http.get(url + "/file").content == b"x" * 200_000
        assert http.get(url + "/file").content == b"x" * 200_000
    assert accepted == [0, 1]  # the half-read one was closed; the next one was kept


def test_nothing_listening_is_a_connect_error_that_reached_nothing() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: refused
        with (
            TelegramClient(FAKE_TOKEN, f"http://127.0.0.1:{port}") as client,
            pytest.raises(TelegramApiError) as caught,
        ):
            client.send_message(chat_id=1, text="hello")
    assert caught.value.reached is False
    assert caught.value.retryable


def test_a_server_closing_without_an_answer_is_a_call_of_unknown_outcome() -> None:
    def serve(conn: socket.socket, n: int) -> None:
        with conn:
            read_request(conn)  # and hang up

    with (
        raw_server(serve) as (url, _accepted),
        TelegramClient(FAKE_TOKEN, url) as client,
        pytest.raises(TelegramApiError) as caught,
    ):
        client.send_message(chat_id=1, text="hello")
    assert caught.value.reached is None
    assert caught.value.retryable


def test_the_fake_sees_the_clients_calls_on_one_connection_from_threads() -> None:
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


# --- TLS: the Bot API is reached over HTTPS; the transport verifies the certificate and name -
@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A loopback HTTPS server with a self-signed certificate for ``localhost``: (port, the
    certificate's file)."""
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

    def serve(conn: socket.socket) -> None:
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
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
        yield listener.getsockname()[1], str(cert)
    finally:
        listener.close()


def test_https_calls_go_through_a_verified_connection_and_keep_it(
    tls_server: tuple[int, str],
) -> None:
    import ssl

    port, cert = tls_server
    transport = KeepAliveTransport(ssl_context=ssl.create_default_context(cafile=cert))
    with httpx.Client(transport=transport) as client:
        for _ in range(2):
            response = client.post(f"https://localhost:{port}/bot1:x/getMe", json={})
            assert response.status_code == 200
            assert response.json() == {"ok": True, "result": True}
        assert sum(len(idle) for idle in transport._idle.values()) == 1  # one, reused


def test_an_untrusted_certificate_is_refused_before_anything_is_sent(
    tls_server: tuple[int, str],
) -> None:
    port, _cert = tls_server
    # the system's trust store
    with httpx.Client(transport=KeepAliveTransport()) as client, pytest.raises(httpx.ConnectError):
        client.post(f"https://localhost:{port}/bot1:x/getMe", json={})


def test_a_certificate_for_another_name_is_refused(tls_server: tuple[int, str]) -> None:
    import ssl

    port, cert = tls_server
    transport = KeepAliveTransport(ssl_context=ssl.create_default_context(cafile=cert))
    # the certificate names localhost only
    with httpx.Client(transport=transport) as client, pytest.raises(httpx.ConnectError):
        client.post(f"https://127.0.0.1:{port}/bot1:x/getMe", json={})
