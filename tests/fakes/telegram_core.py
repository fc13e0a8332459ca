"""The fake Bot API's state and request handling, shared by the HTTP server and the transport.

`FakeTelegram.handle(path, content_type, body, query)` answers one request like Telegram: it
checks the token, the method and the parameters against the spec, applies injected faults, and
computes a realistic result. Everything is recorded in `calls`. Thread-safe: one lock (a
Condition, so getUpdates can wait for `push_update`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.botapi_spec import BotApiSpec, RawParams, RequestError, load_spec, parse_request
from tests.fakes.telegram_members import user_json
from tests.fakes.telegram_results import Results

_PATH = re.compile(r".*/bot(?P<token>[^/]*)/(?P<method>[^/]+)")
_FILE_PATH = re.compile(r".*/file/bot(?P<token>[^/]*)/(?P<path>.+)")
DOWNLOAD = "<file download>"  # the method name downloads are recorded under
_TOKEN = re.compile(r"(?P<bot_id>\d+):[A-Za-z0-9_-]+")
_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
}
BLOCKED = "Forbidden: bot was blocked by the user"
KICKED = "Forbidden: bot was kicked from the group chat"
MIGRATED = "Bad Request: group chat was upgraded to a supergroup chat"


@dataclass(frozen=True)
class Call:
    """One request the fake received. `params` are decoded (ints, dicts, UploadedFile)."""

    method: str
    params: dict[str, Any]
    token: str
    time: float
    status: int = 200
    failed: bool = False
    description: str = ""


# Methods Telegram does not make from a webhook answer (besides the get* ones).
_NOT_FROM_WEBHOOK = frozenset({"setwebhook", "deletewebhook", "close", "logout"})


@dataclass
class FakeResponse:
    """What to answer: a JSON payload (or raw bytes), after `delay` s, or drop the connection."""

    status: int
    payload: dict[str, Any] | None = None
    raw: bytes | None = None
    delay: float = 0.0
    drop: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> bytes:
        """The response body."""
        if self.raw is not None:
            return self.raw
        return json.dumps(self.payload, ensure_ascii=False).encode("utf-8")


@dataclass
class _Fault:
    remaining: int
    status: int | None  # None: a slow success
    description: str = ""
    error_code: int | None = None
    parameters: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0
    raw_body: bytes | None = None
    drop: bool = False


class FakeTelegram:
    """The fake Bot API: control methods for tests plus `handle()` for the adapters.

    `token` restricts the accepted token (default: any `<digits>:<secret>`). `long_poll_cap`
    bounds how long getUpdates waits whatever `timeout` it is given. `on_call` is called with
    every recorded Call (the command line uses it to print calls).
    """

    def __init__(
        self,
        *,
        spec: BotApiSpec | None = None,
        token: str | None = None,
        long_poll_cap: float = 5.0,
        on_call: Callable[[Call], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec or load_spec()
        self.token = token
        self.long_poll_cap = long_poll_cap
        self.on_call = on_call
        self.clock = clock
        self.lock = threading.Condition(threading.RLock())
        self.stopping = threading.Event()
        self._local = threading.local()
        self.reset()

    # -- control API for tests ------------------------------------------------------------

    def reset(self) -> None:
        """Forget calls, updates, faults, blocked chats, the webhook and sent messages."""
        with self.lock:
            # Requests still in flight from before the reset (a long poll of an earlier test)
            # belong to that test: their calls are not recorded in the new generation.
            self._generation = getattr(self, "_generation", 0) + 1
            self._calls: list[Call] = []
            self._faults: dict[str, list[_Fault]] = {}
            self._chat_errors: dict[int | str, tuple[int, str, dict[str, int]]] = {}
            self.results = Results(self.spec, self.clock)
            self.limits: Any = None  # tests/fakes/telegram_limits.py installs itself here
            self.lock.notify_all()

    @property
    def calls(self) -> list[Call]:
        """A snapshot of every call so far, oldest first."""
        with self.lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[Call]:
        """The calls of one method (failed ones included; check `Call.failed`)."""
        return [call for call in self.calls if call.method == method]

    def push_update(self, update: dict[str, Any]) -> int:
        """Queue an Update for getUpdates (an `update_id` is assigned when missing)."""
        with self.lock:
            update_id = self.results.push_update(update)
            self.lock.notify_all()
            return update_id

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by a getUpdates offset."""
        with self.lock:
            return list(self.results.updates)

    @property
    def webhook(self) -> dict[str, Any] | None:
        """The webhook set by the last setWebhook (secret_token included), or None."""
        with self.lock:
            return dict(self.results.webhook) if self.results.webhook else None

    def webhook_reply(
        self, token: str, body: bytes, content_type: str | None = "application/json"
    ) -> None:
        """What Telegram does with a 2xx answer to its webhook request that names a method:
        it makes that call as the bot of ``token``, except the ``get*``
        methods, setWebhook, deleteWebhook, close and logOut, and tells the bot nothing.
        An answer that names no method is ignored."""
        try:
            payload = json.loads(body)
        except ValueError:
            return
        method = payload.get("method") if isinstance(payload, dict) else None
        if not isinstance(method, str) or not method:
            return
        if method.lower().startswith("get") or method.lower() in _NOT_FROM_WEBHOOK:
            return
        params = {key: value for key, value in payload.items() if key != "method"}
        self.handle(f"/bot{token}/{method}", content_type, json.dumps(params).encode())

    def set_webhook_error(self, message: str, date: int | None = None) -> None:
        """Make getWebhookInfo report a delivery error (`last_error_message`/`_date`)."""
        with self.lock:
            self.results.last_error = (int(date or self.clock()), message)

    def message(self, chat_id: int | str, message_id: int) -> dict[str, Any] | None:
        """A message the fake sent (as last edited), or None."""
        with self.lock:
            return self.results.stored_message(chat_id, message_id)

    def fail_next(
        self,
        method: str,
        times: int = 1,
        status: int = 500,
        description: str | None = None,
        retry_after: int | None = None,
        delay: float = 0.0,
        error_code: int | None = None,
        *,
        migrate_to_chat_id: int | None = None,
        raw_body: bytes | None = None,
        drop_connection: bool = False,
    ) -> None:
        """Make the next `times` valid calls of `method` fail like Telegram does.

        429 carries `parameters.retry_after` (default 1) and a Retry-After header; the default
        description follows the status ("Too Many Requests: retry after N", "Internal Server
        Error", ...). `raw_body` answers a non-JSON body (a proxy error page);
        `drop_connection` closes the connection without an answer. Invalid calls fail
        validation first and do not use up a fault.
        """
        parameters: dict[str, int] = {}
        if status == 429:
            retry_after = 1 if retry_after is None else retry_after
            description = description or f"Too Many Requests: retry after {retry_after}"
        if retry_after is not None:
            parameters["retry_after"] = retry_after
        if migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = migrate_to_chat_id
        fault = _Fault(
            times,
            status,
            description or _REASONS.get(status, "Error"),
            error_code,
            parameters,
            delay,
            raw_body,
            drop_connection,
        )
        self._add_fault(method, fault)

    def delay_next(self, method: str, seconds: float, times: int = 1) -> None:
        """Answer the next `times` calls of `method` successfully, but only after `seconds`."""
        self._add_fault(method, _Fault(times, None, delay=seconds))

    def block_chat(self, chat_id: int | str, description: str | None = None) -> None:
        """Answer 403 to every call aimed at `chat_id` (its `chat_id` param) until unblocked."""
        key = _chat_key(chat_id)
        default = BLOCKED if isinstance(key, int) and key > 0 else KICKED
        with self.lock:
            self._chat_errors[key] = (403, description or default, {})

    def migrate_chat(self, chat_id: int, to_chat_id: int) -> None:
        """Answer 400 "group chat was upgraded" with `migrate_to_chat_id` for `chat_id`."""
        with self.lock:
            self._chat_errors[chat_id] = (400, MIGRATED, {"migrate_to_chat_id": to_chat_id})

    def set_chat(self, chat_id: int, type: str, **fields: Any) -> None:
        """Describe a chat (e.g. `type="channel"`) instead of inferring it from the id."""
        with self.lock:
            self.results.chats[chat_id] = {"id": chat_id, "type": type, **fields}

    def set_chat_member(
        self,
        chat_id: int,
        user_id: int,
        status: str = "member",
        *,
        first_name: str = "",
        username: str | None = None,
        is_bot: bool = False,
        **rights: Any,
    ) -> None:
        """Describe one member of a chat (the bot too, by its id): ``status`` is a ChatMember
        status, ``rights`` its fields (``can_restrict_members=True``...). A described chat
        follows Telegram's rights rules (tests/fakes/telegram_members.py)."""
        extra = {"username": username} if username else {}
        user = user_json(user_id, first_name, is_bot=is_bot, **extra)
        with self.lock:
            self.results.describe_member(chat_id, user, status, **rights)

    def chat_member(self, chat_id: int, user_id: int) -> dict[str, Any]:
        """The ChatMember the fake would answer for ``user_id`` in ``chat_id`` now."""
        with self.lock:
            return self.results.member(chat_id, user_id)

    def note_message(
        self, chat_id: int, message_id: int, *, date: int, user_id: int | None = None
    ) -> None:
        """Tell the fake when (and by whom) a message from a test's update was sent, for
        deleteMessage's 48-hour and rights rules."""
        with self.lock:
            self.results.note_message(chat_id, message_id, date, user_id)

    def unblock_chat(self, chat_id: int | str) -> None:
        """Undo `block_chat` or `migrate_chat`."""
        with self.lock:
            self._chat_errors.pop(_chat_key(chat_id), None)

    def add_file(self, file_id: str, data: bytes, kind: str = "voice") -> str:
        """Make ``file_id`` a file Telegram holds (``kind``: voice, video_note, ...):
        getFile answers it and its file_path downloads ``data``. Returns the file_path."""
        with self.lock:
            return self.results.add_file(file_id, data, kind)

    def wait(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        self.stopping.wait(seconds)

    # -- request handling -----------------------------------------------------------------

    def handle(
        self, path: str, content_type: str | None, body: bytes, query: str = ""
    ) -> FakeResponse:
        """Answer one Bot API request (`path` is `/bot<token>/<method>`)."""
        self._local.generation = self._generation
        started = self.clock()
        download = _FILE_PATH.fullmatch(path)
        if download is not None:
            return self._download(download["token"], download["path"], started)
        match = _PATH.fullmatch(path)
        if match is None:
            return _error(404, "Not Found")
        token, method = match["token"], match["method"]
        if not self._token_ok(token):
            return self._fail(Call(method, {}, token, started), 401, "Unauthorized")
        name = self.spec.method_name(method)
        if name is None:
            return self._fail(Call(method, {}, token, started), 404, "Not Found")
        raw = RawParams()
        try:
            raw = parse_request(content_type, body, query)
            params = self.spec.validate(name, raw)
        except RequestError as exc:
            return self._fail(Call(name, raw.merged(), token, started), exc.status, exc.description)
        return self._answer(Call(name, params, token, started))

    def _download(self, token: str, path: str, started: float) -> FakeResponse:
        """``GET /file/bot<token>/<file_path>``: the bytes, as application/octet-stream."""
        call = Call(DOWNLOAD, {"file_path": path}, token, started)
        if not self._token_ok(token):
            return self._fail(call, 401, "Unauthorized")
        fault = self._take_fault(DOWNLOAD)
        if fault is not None and fault.status is not None:
            return self._injected(call, fault)
        with self.lock:
            data = self.results.download(path)
        if data is None:
            return self._fail(call, 404, "Not Found")
        self._record(call)
        headers = {"Content-Type": "application/octet-stream"}
        return FakeResponse(200, raw=data, headers=headers, delay=fault.delay if fault else 0.0)

    def _answer(self, call: Call) -> FakeResponse:
        fault = self._take_fault(call.method)
        if fault is not None and fault.status is not None:
            return self._injected(call, fault)
        delay = fault.delay if fault else 0.0
        limited = self.limits.refuse(call.method, call.params) if self.limits else None
        if limited is not None:
            return self._fail(call, 429, limited[0], limited[1], delay=delay)
        chat_error = self._chat_error(call.params)
        if chat_error is not None:
            status, description, parameters = chat_error
            return self._fail(call, status, description, parameters, delay=delay)
        try:
            result = self._result(call)
        except RequestError as exc:
            return self._fail(call, exc.status, exc.description, delay=delay)
        self._record(call)
        return FakeResponse(200, {"ok": True, "result": result}, delay=delay)

    def _result(self, call: Call) -> Any:
        if call.method == "getUpdates":
            return self._get_updates(call.params)
        digits = re.match(r"\d+", call.token)
        bot_id = int(digits.group()) if digits else 1
        with self.lock:
            return self.results.answer(call.method, call.params, bot_id)

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        timeout = min(float(params.get("timeout", 0)), self.long_poll_cap)
        deadline = time.monotonic() + timeout
        with self.lock:
            self.results.check_polling_allowed()
            self.results.confirm(params.get("offset"))
            while not self.results.updates and not self.stopping.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.lock.wait(remaining)
            return self.results.updates[: params.get("limit", 100)]

    def _injected(self, call: Call, fault: _Fault) -> FakeResponse:
        status = fault.status or 500
        if fault.drop or fault.raw_body is not None:
            self._record(call, status, fault.description, failed=True)
            return FakeResponse(
                status, raw=fault.raw_body or b"", delay=fault.delay, drop=fault.drop
            )
        return self._fail(
            call,
            status,
            fault.description,
            fault.parameters,
            delay=fault.delay,
            error_code=fault.error_code,
        )

    def _fail(
        self,
        call: Call,
        status: int,
        description: str,
        parameters: dict[str, int] | None = None,
        *,
        delay: float = 0.0,
        error_code: int | None = None,
    ) -> FakeResponse:
        self._record(call, status, description, failed=True)
        response = _error(status, description, parameters, error_code)
        response.delay = delay
        return response

    def _record(
        self, call: Call, status: int = 200, description: str = "", failed: bool = False
    ) -> None:
        call = Call(call.method, call.params, call.token, call.time, status, failed, description)
        with self.lock:
            if getattr(self._local, "generation", self._generation) != self._generation:
                return  # started before a reset: a leftover of an earlier test
            self._calls.append(call)
        if self.on_call is not None:
            self.on_call(call)

    def _token_ok(self, token: str) -> bool:
        if self.token is not None:
            return token == self.token
        return _TOKEN.fullmatch(token) is not None

    def _add_fault(self, method: str, fault: _Fault) -> None:
        name = self.spec.method_name(method) or method
        with self.lock:
            self._faults.setdefault(name, []).append(fault)

    def _take_fault(self, method: str) -> _Fault | None:
        with self.lock:
            queue = self._faults.get(method)
            if not queue:
                return None
            fault = queue[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                queue.pop(0)
            return fault

    def _chat_error(self, params: dict[str, Any]) -> tuple[int, str, dict[str, int]] | None:
        if "chat_id" not in params:
            return None
        with self.lock:
            return self._chat_errors.get(_chat_key(params["chat_id"]))


def _chat_key(chat_id: int | str) -> int | str:
    text = str(chat_id)
    return int(text) if text.lstrip("-").isdigit() else text.lower()


def _error(
    status: int,
    description: str,
    parameters: dict[str, int] | None = None,
    error_code: int | None = None,
) -> FakeResponse:
    payload: dict[str, Any] = {
        "ok": False,
        "error_code": error_code or status,
        "description": description,
    }
    headers = {}
    if parameters:
        payload["parameters"] = parameters
        if "retry_after" in parameters:
            headers["Retry-After"] = str(parameters["retry_after"])
    return FakeResponse(status, payload, headers=headers)
