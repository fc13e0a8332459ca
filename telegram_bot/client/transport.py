"""The client's default httpx transport: HTTP/1.1 with kept-alive connections, on the standard
library's ``http.client``.

A command's reply is a Bot API call made while Telegram waits for the webhook's answer, so the
cost of one call is paid on every command and twice on a button press. httpx's own transport
(httpcore and h11) spends about 0.5 ms of CPU on a small JSON call, three times what
``http.client`` needs for the same exchange on the same kept-alive connection. This transport
keeps the httpx interface (timeouts, errors, proxies mounted by the client, injectable test
transports) and only replaces the wire work.

Errors are httpx's, raised the way httpcore raises them: ``ConnectError``/``ConnectTimeout``
before a byte left (nothing reached the server), ``WriteError``/``WriteTimeout`` while sending,
``ReadError``/``ReadTimeout``/``RemoteProtocolError`` after. An idle connection the server has
closed is noticed before it is reused (a readable idle socket is closed, never written to), so a
normal keep-alive expiry does not turn into a call of unknown outcome.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from collections.abc import Iterator

import httpx

MAX_IDLE_PER_HOST = 32
_CHUNK = 64 * 1024
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PoolKey = tuple[str, str, int]


class KeepAliveTransport(httpx.BaseTransport):
    """Thread-safe: each request takes an idle connection of its host (or opens one) and gives
    it back once its response was read to the end."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl_context = ssl_context
        self._idle: dict[_PoolKey, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        key = (url.scheme, url.host, url.port or _DEFAULT_PORTS[url.scheme])
        timeouts = request.extensions.get("timeout", {})
        body = request.read()
        connection = self._take(key) or self._connect(key, timeouts.get("connect"))
        try:
            response = _exchange(connection, request, body, timeouts)
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            response.status,
            headers=[(name, value) for name, value in response.getheaders()],
            stream=_ResponseStream(self, key, connection, response),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason.encode()},
        )

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def _take(self, key: _PoolKey) -> http.client.HTTPConnection | None:
        while True:
            with self._lock:
                connections = self._idle.get(key)
                if not connections:
                    return None
                connection = connections.pop()
            if _usable(connection):
                return connection
            connection.close()

    def _give_back(self, key: _PoolKey, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            connections = self._idle.setdefault(key, [])
            if len(connections) < MAX_IDLE_PER_HOST:
                connections.append(connection)
                return
        connection.close()

    def _connect(self, key: _PoolKey, timeout: float | None) -> http.client.HTTPConnection:
        scheme, host, port = key
        connection: http.client.HTTPConnection
        if scheme == "https":
            if self._ssl_context is None:
                self._ssl_context = httpx.create_ssl_context()
            connection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=self._ssl_context
            )
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except TimeoutError as exc:
            connection.close()
            raise httpx.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:  # refused, unreachable, name resolution, TLS handshake
            connection.close()
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection


def _exchange(
    connection: http.client.HTTPConnection,
    request: httpx.Request,
    body: bytes,
    timeouts: dict[str, float | None],
) -> http.client.HTTPResponse:
    """Send ``request`` and read the status line and headers of its answer."""
    target = request.url.raw_path.decode("ascii")
    try:
        connection.sock.settimeout(timeouts.get("write"))
        connection.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in request.headers.raw:
            connection.putheader(name.decode("latin-1"), value)
        connection.endheaders(body or None)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(str(exc) or "write timed out") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise httpx.WriteError(str(exc) or type(exc).__name__) from exc
    try:
        connection.sock.settimeout(timeouts.get("read"))
        return connection.getresponse()
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "read timed out") from exc
    except (http.client.HTTPException, ValueError) as exc:  # closed early, a bad status line
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc) or type(exc).__name__) from exc


def _usable(connection: http.client.HTTPConnection) -> bool:
    """An idle connection is usable when its socket has nothing to read: readable means the
    server closed it (or sent what nobody asked for)."""
    sock = connection.sock
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return not poller.poll(0)


class _ResponseStream(httpx.SyncByteStream):
    """The body, read in chunks; the connection goes back to the pool when it was read to the
    end and the server keeps it open, else it is closed."""

    def __init__(
        self,
        transport: KeepAliveTransport,
        key: _PoolKey,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
    ) -> None:
        self._transport = transport
        self._key = key
        self._connection: http.client.HTTPConnection | None = connection
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._response.read(_CHUNK)
            except TimeoutError as exc:
                raise httpx.ReadTimeout(str(exc) or "read timed out") from exc
            except http.client.HTTPException as exc:  # IncompleteRead: the body was cut
                raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._response.isclosed() and not self._response.will_close:
            self._transport._give_back(self._key, connection)
        else:
            self._response.close()
            connection.close()
