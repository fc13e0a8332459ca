"""The one HTTP entry point to the Telegram Bot API: `TelegramClient.call` and its error mapping.

No Django here: settings are passed in by whoever builds the client.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx

from telegram_bot.client.files import FileStream, check_file_path
from telegram_bot.client.limiter import SEND_METHODS, OutgoingLimiter, is_slot_taken
from telegram_bot.client.methods import TelegramMethods
from telegram_bot.errors import FileTooLargeError, TelegramApiError, TelegramRateLimitError
from telegram_bot.languages import plain
from telegram_bot.metrics import observe_telegram_call
from telegram_bot.redaction import redact

DEFAULT_BASE_URL = "https://api.telegram.org"
# Read must outlast getUpdates long polling (get_updates widens it per call for longer polls).
DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=35.0, write=10.0, pool=5.0)
# The pool of the default transport. Every web thread and worker may call at once; a call that
# finds all connections busy waits up to the pool timeout (then fails: nothing was sent). An
# idle connection is kept 30 s: a reply to the next command reuses it instead of a new TLS
# handshake, and httpx drops one the server has closed before reusing it.
DEFAULT_LIMITS = httpx.Limits(
    max_connections=64, max_keepalive_connections=32, keepalive_expiry=30.0
)
# A connection that could not be made is tried again this many times (httpx retries only
# connecting, so nothing is sent twice).
CONNECT_RETRIES = 1

_POLL_MARGIN = 10.0  # seconds of read timeout beyond a getUpdates long poll
# The longest one call can take with the default timeouts: waiting for the pool, connecting
# (and again), writing and reading.
MAX_CALL_SECONDS = sum(
    part or 0.0
    for part in (
        DEFAULT_TIMEOUT.pool,
        DEFAULT_TIMEOUT.connect,
        *([DEFAULT_TIMEOUT.connect] * CONNECT_RETRIES),
        DEFAULT_TIMEOUT.write,
        DEFAULT_TIMEOUT.read,
    )
)
# httpx's errors raised before a request left this machine: nothing reached Telegram, so a
# send that failed with one of them may be made again. Every other transport error (a write
# or read that failed or timed out, a connection closed without an answer) may come after
# Telegram received the request: its outcome is unknown.
NOT_SENT = (
    httpx.ConnectError,  # refused, unreachable, name resolution, TLS handshake
    httpx.ConnectTimeout,
    httpx.PoolTimeout,  # no connection of the pool came free
    httpx.ProxyError,  # the proxy refused to open the tunnel
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
)
_GATEWAY_ERRORS = (502, 504, 524)
_URL_CACHE_LIMIT = 256  # method names come from code: a few dozen
_TOKEN_SHAPE = re.compile(r"\d+:[A-Za-z0-9_-]+")

RequestTimeout = float | httpx.Timeout | None
_HEADERS = {"User-Agent": "telegram-community-bot"}


class TelegramClient(TelegramMethods):
    """A Bot API client: one `httpx.Client` (pooled connections), explicit timeouts.

    Without a `transport` it sends through httpx's own (`httpx.HTTPTransport` with
    `DEFAULT_LIMITS` and `CONNECT_RETRIES`); tests pass theirs (the fake Bot API in process,
    or `httpx.MockTransport`).

    `call(method, **params)` is the only place that sends a request; the typed helpers of
    `TelegramMethods` are thin wrappers over it. Every failure raises a `TelegramApiError`
    (`TelegramRateLimitError` for 429). Neither exceptions nor `repr()` contain the token.
    Thread-safe; call `close()` (or use it as a context manager) when done.
    """

    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: httpx.Timeout | None = None,
        transport: httpx.BaseTransport | None = None,
        limiter: OutgoingLimiter | None = None,
    ) -> None:
        if not _TOKEN_SHAPE.fullmatch(token or ""):
            raise ValueError("the bot token does not look like '<bot id>:<secret>'")
        self._token = token
        # Every send method waits for its slot here, and every 429 pauses all senders
        # (client/limiter.py); None: unpaced (tools, tests that do not test the limits).
        self.limiter = limiter
        self._base_url = base_url.rstrip("/")
        # Each method's absolute URL, parsed once: given a path, httpx parses it and the
        # merged URL on every call (about a fifth of a call's CPU).
        self._urls: dict[str, httpx.URL] = {}
        if transport is None:
            transport = httpx.HTTPTransport(limits=DEFAULT_LIMITS, retries=CONNECT_RETRIES)
        self._http = httpx.Client(
            base_url=self._base_url,
            timeout=timeout or DEFAULT_TIMEOUT,
            transport=transport,
            follow_redirects=False,
            headers=_HEADERS,
        )

    @property
    def bot_id(self) -> int:
        """The bot's user id (the public part of the token)."""
        return int(self._token.split(":", 1)[0])

    @property
    def base_url(self) -> str:
        """The API base URL, without the token."""
        return self._base_url

    @observe_telegram_call
    def call(self, method: str, /, *, request_timeout: RequestTimeout = None, **params: Any) -> Any:
        """Call Bot API `method` with `params` and return its `result`.

        None values are dropped. Params holding files (bytes, a `(filename, bytes)` or
        `(filename, bytes, content_type)` tuple, or a binary file object) are sent as
        multipart/form-data, the others as a JSON body. `request_timeout` overrides the client's
        timeout for this call. Raises `TelegramApiError` (or `TelegramRateLimitError`).
        """
        if self._http.is_closed:
            raise RuntimeError("this TelegramClient is closed")
        params = {key: plain(value) for key, value in params.items() if value is not None}
        limiter = self.limiter
        if limiter is not None and method in SEND_METHODS and not is_slot_taken():
            limiter.before_send(method, params.get("chat_id"))
        timeout = httpx.USE_CLIENT_DEFAULT if request_timeout is None else request_timeout
        failure: Exception | None = None
        try:
            response = self._http.post(self._url(method), timeout=timeout, **_body(params))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            failure = exc
        if failure is not None:
            # Raised outside the except block so the httpx error (its request holds the
            # tokenised URL) is not chained as __context__.
            raise telegram_error(method, cause=failure)
        try:
            return _result(method, response)
        except TelegramRateLimitError as exc:
            if limiter is not None:
                limiter.rate_limited(exc.retry_after)
            raise

    def download_file(self, file_path: str, *, max_bytes: int) -> FileStream:
        """Start downloading a file by the ``file_path`` getFile gave, as a ``FileStream``
        (close it when done). Raises ValueError for a path getFile would not give,
        FileTooLargeError when Telegram announces more than ``max_bytes``, TelegramApiError
        when the download fails to start."""
        request = self._http.build_request("GET", self._file_path(check_file_path(file_path)))
        failure: Exception | None = None
        try:
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            failure = exc
        if failure is not None:
            raise telegram_error("getFile download", cause=failure)  # the URL holds the token
        stream = FileStream(response, max_bytes)
        if response.status_code != 200:
            try:
                response.read()
                payload = _json_object(response)
            finally:
                stream.close()
            raise telegram_error("getFile download", status=response.status_code, payload=payload)
        if stream.size is not None and stream.size > max_bytes:
            stream.close()
            raise FileTooLargeError(f"file of {stream.size} bytes, over {max_bytes}")
        return stream

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __enter__(self) -> TelegramClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TelegramClient(base_url={self._base_url!r}, bot_id={self.bot_id})"

    def _long_poll_timeout(self, seconds: int) -> httpx.Timeout:
        # The read timeout must outlast the poll, whatever the client's default is.
        default = self._http.timeout
        read = None if default.read is None else max(default.read, seconds + _POLL_MARGIN)
        return httpx.Timeout(
            connect=default.connect, read=read, write=default.write, pool=default.pool
        )

    def _url(self, method: str) -> httpx.URL:
        url = self._urls.get(method)
        if url is None:
            url = httpx.URL(self._base_url + self._path(method))
            if len(self._urls) < _URL_CACHE_LIMIT:
                self._urls[method] = url
        return url

    def _path(self, method: str) -> str:
        # The only place a Bot API method URL is built. httpx appends it to the base URL's path (a
        # prefix such as a reverse proxy's /telegram is kept). The leading slash matters:
        # without it "bot123:ABC/..." would parse as a URL with the scheme "bot123".
        return f"/bot{self._token}/{method}"

    def _file_path(self, file_path: str) -> str:
        # The file URL of the Bot API, like _path: only ever requested from here.
        return f"/file/bot{self._token}/{file_path}"


def telegram_error(
    method: str,
    *,
    status: int | None = None,
    payload: Mapping[str, Any] | None = None,
    cause: Exception | None = None,
) -> TelegramApiError:
    """Turn any failed call into a typed error: the single mapping of Telegram failures.

    - `cause` (an httpx error): `status` None; retryable for network errors and timeouts,
      permanent for configuration errors such as an invalid URL.
    - no usable JSON `payload`: classified by the HTTP `status` (429/5xx retryable).
    - an `ok: false` payload: `error_code`, `description`, `parameters.retry_after` and
      `parameters.migrate_to_chat_id` kept; 429 becomes `TelegramRateLimitError`.
    """
    if cause is not None:
        detail = "timed out" if isinstance(cause, httpx.TimeoutException) else "network error"
        transient = isinstance(cause, httpx.TransportError) and not isinstance(
            cause, httpx.UnsupportedProtocol
        )
        description = f"{detail} ({_describe(cause)})"
        reached = False if isinstance(cause, NOT_SENT) else None
        return TelegramApiError(
            method, description=description, retryable=transient, reached=reached
        )
    if payload is None:
        # A proxy in front of the Bot API (a local server) gave up waiting for it, or a 2xx
        # answer that cannot be read (`ok: true` without `result`, a page): the request may
        # have been processed, so it is no refusal (a post would be published twice).
        unread = status is not None and 200 <= status < 300
        reached = None if status in _GATEWAY_ERRORS or unread else True
        return TelegramApiError(
            method, status=status, description="answer is not Bot API JSON", reached=reached
        )
    error_code = _int_or_none(payload.get("error_code")) or status
    description = redact(str(payload.get("description") or ""))
    parameters = payload.get("parameters")
    parameters = parameters if isinstance(parameters, Mapping) else {}
    retry_after = _retry_after(parameters.get("retry_after"))
    if error_code == 429:
        return TelegramRateLimitError(
            method,
            retry_after=1.0 if retry_after is None else retry_after,
            status=status,
            error_code=error_code,
            description=description,
        )
    return TelegramApiError(
        method,
        status=status,
        error_code=error_code,
        description=description,
        retry_after=retry_after,
        migrate_to_chat_id=_int_or_none(parameters.get("migrate_to_chat_id")),
    )


def _result(method: str, response: httpx.Response) -> Any:
    payload = _json_object(response)
    if payload is not None and payload.get("ok") is True and "result" in payload:
        return payload["result"]
    if payload is not None and payload.get("ok") is not False:
        payload = None  # JSON, but not a Bot API answer
    raise telegram_error(method, status=response.status_code, payload=payload)


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        payload = response.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return None
    return payload if isinstance(payload, dict) else None


def _body(params: dict[str, Any]) -> dict[str, Any]:
    files = {key: _file_field(key, value) for key, value in params.items() if _is_file(value)}
    if not files:
        return {"json": params}
    data = {key: _form_value(value) for key, value in params.items() if key not in files}
    return {"data": data, "files": files}


def _is_file(value: Any) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return True
    if isinstance(value, tuple):
        return len(value) in (2, 3) and isinstance(value[0], str) and _is_content(value[1])
    return hasattr(value, "read")


def _is_content(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview)) or hasattr(value, "read")


def _file_field(name: str, value: Any) -> Any:
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if isinstance(value, bytes):
        return (name, value)
    return value  # a (filename, content[, content_type]) tuple or a file object


def _form_value(value: Any) -> str:
    # Objects, arrays and booleans travel as JSON text in form encodings.
    if isinstance(value, (dict, list, tuple, bool)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {redact(text)}" if text else type(exc).__name__


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Telegram's flood waits are seconds, at most hours. A larger value comes from a broken proxy
# or a local server; taken as sent it overflowed the retry job's date (the answer was lost).
MAX_RETRY_AFTER = 24 * 3600.0


def _retry_after(value: Any) -> float | None:
    """``parameters.retry_after`` in seconds, within 0..``MAX_RETRY_AFTER``; None if it is no
    number (or not a number: NaN, a negative one)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond a float
        return MAX_RETRY_AFTER
    if seconds != seconds or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)
