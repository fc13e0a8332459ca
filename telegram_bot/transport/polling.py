"""Long polling: ``getUpdates`` into the same pipeline as the webhook (``manage.py runbot``).

The offset is confirmed to Telegram only after an update was handled for good (an outcome that
is ``final``, or a malformed update that is skipped), so a crash or a stop loses nothing. An
update that could not be handled now (the KV store or the database is down, or another worker
holds its claim) stops the batch: the poller backs off and fetches again from that update.

Back-off (getUpdates errors and stalled batches): 1 s doubling to 60 s, with +-20 % jitter, at
least Telegram's ``retry_after``; reset by a round that completes. A webhook being set (409),
another poller (409) or a rejected token (401/404) stop polling with an explanation.
``stop_on_signals``: SIGINT and SIGTERM finish the update being handled, start no other.
"""

from __future__ import annotations

import logging
import random
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.updates import Update, UpdateShapeError, parse_update

log = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0
JITTER = 0.2  # the delay is scaled by a random factor in [1 - JITTER, 1 + JITTER]


class PollingStopped(Exception):
    """Polling cannot go on without the operator (webhook set, token rejected, ...)."""


class _Interrupted(BaseException):
    """Raised by the signal handler to cut a long poll or a back-off sleep short."""


class Poller:
    """The getUpdates loop, one round at a time (``run_once``) or until ``stop()`` (``run``).

    ``sleep`` waits between rounds after a failure (default: a wait that ``stop()`` ends);
    ``process`` handles one update (default: the pipeline). ``offset`` is the next update id
    to ask for; ``last_problem`` describes why the last round did not complete (or None).
    """

    def __init__(
        self,
        client: TelegramClient,
        *,
        allowed_updates: list[str],
        poll_timeout: int = 25,
        backoff_base: float = BACKOFF_BASE_SECONDS,
        backoff_max: float = BACKOFF_MAX_SECONDS,
        sleep: Callable[[float], object] | None = None,
        process: Callable[[Update], Outcome] = process_update,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.allowed_updates = allowed_updates
        self.poll_timeout = poll_timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.process = process
        self.rand = rand
        self.offset: int | None = None
        self._confirmed: int | None = None  # the offset Telegram last received
        self.failures = 0
        self.delay = 0.0  # to wait before the next getUpdates
        self.last_problem: str | None = None
        self.waiting = False  # inside getUpdates or a back-off sleep: safe to interrupt
        self._stopping = threading.Event()
        self._sleep = sleep or self._stopping.wait

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self) -> None:
        """Finish the update being handled, then return from ``run`` / ``run_once``."""
        self._stopping.set()

    def run(self, between_rounds: Callable[[], object] | None = None) -> None:
        """Poll until ``stop()``; PollingStopped when the operator must step in."""
        while not self.stopping:
            if between_rounds is not None:
                between_rounds()
            self.run_once()

    def run_once(self) -> int:
        """Wait out any back-off, fetch once, handle the batch; returns the updates handled."""
        updates = self._fetch()
        if updates is None:
            return 0
        handled = 0
        for update in updates:
            if self.stopping:
                return handled  # not confirmed: Telegram sends the rest again next time
            outcome = self._handle(update)
            if outcome is not None and not outcome.final:
                self._failed(
                    f"update {update.get('update_id')} could not be handled now "
                    f"({outcome.value}); fetching it again"
                )
                return handled
            self._advance(update)
            handled += 1
        self.failures, self.last_problem = 0, None
        return handled

    def confirm(self) -> None:
        """Tell Telegram the handled updates are done, so a restart does not get them again.

        Telegram forgets an update once getUpdates is called with a higher offset; this is that
        call, without waiting (what it returns stays unconfirmed). Errors are only logged: the
        pipeline's idempotency makes a re-delivery harmless.
        """
        if self.offset is None or self.offset == self._confirmed:
            return
        try:
            with self._interruptible():
                self.client.get_updates(
                    offset=self.offset, limit=1, timeout=0, allowed_updates=self.allowed_updates
                )
            self._confirmed = self.offset
        except _Interrupted:
            pass
        except TelegramApiError as exc:
            log.info("could not confirm the offset %s: %s", self.offset, exc)

    def _fetch(self) -> list[dict[str, Any]] | None:
        try:
            with self._interruptible():
                if self.delay > 0:
                    self._sleep(self.delay)
                self.delay = 0.0
                if self.stopping:
                    return None
                updates = self.client.get_updates(
                    offset=self.offset,
                    timeout=self.poll_timeout,
                    allowed_updates=self.allowed_updates,
                )
            self._confirmed = self.offset
            return updates
        except _Interrupted:
            return None
        except TelegramApiError as exc:
            fatal = fatal_problem(exc)
            if fatal:
                raise PollingStopped(fatal) from None
            self._failed(f"getUpdates failed: {exc}", retry_after=exc.retry_after)
            return None

    def _handle(self, update: dict[str, Any]) -> Outcome | None:
        """The pipeline's outcome; None for a malformed update (skipped, never retried)."""
        try:
            parsed = parse_update(update)  # the edge: parsed once, typed from here on
        except UpdateShapeError as exc:
            log.warning("skipping malformed update %s: %s", _update_id(update), exc)
            return None
        outcome = self.process(parsed)
        log.info("update %s: %s", _update_id(update), outcome.value)
        return outcome

    def _advance(self, update: Any) -> None:
        update_id = _update_id(update)
        if update_id is not None:
            self.offset = max(self.offset or 0, update_id + 1)

    def _failed(self, problem: str, retry_after: float | None = None) -> None:
        self.failures += 1
        nominal = self.backoff_base * 2 ** min(self.failures - 1, 30)
        delay = min(self.backoff_max, nominal * (1 - JITTER + 2 * JITTER * self.rand()))
        self.delay = max(delay, retry_after or 0.0)
        self.last_problem = problem
        log.warning("%s; retrying in %.1f s", problem, self.delay)

    @contextmanager
    def _interruptible(self) -> Iterator[None]:
        self.waiting = True
        try:
            yield
        finally:
            self.waiting = False


def fatal_problem(exc: TelegramApiError) -> str | None:
    """What the operator must fix when getUpdates cannot work at all; None if retrying helps."""
    code = exc.error_code or exc.status
    if code == 409:
        if "webhook" in exc.description.lower():
            return (
                "a webhook is set for this bot, and Telegram refuses getUpdates while it is "
                "(409 Conflict). Run `manage.py delete_webhook` first, or pass --delete-webhook."
            )
        return (
            f"another poller is using this bot token (409 Conflict: {exc.description}). "
            "Run only one runbot per bot."
        )
    if code in (401, 404):
        return (
            f"Telegram rejected the bot token ({code} {exc.description or 'Unauthorized'}). "
            "Check TELEGRAM_BOT_TOKEN (and TELEGRAM_API_BASE_URL)."
        )
    return None


def _update_id(update: Any) -> int | None:
    value = update.get("update_id") if isinstance(update, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@contextmanager
def stop_on_signals(poller: Poller) -> Iterator[None]:
    """SIGINT/SIGTERM stop the poller; a wait in progress is cut short (nothing is lost)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be installed from the main thread
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        poller.stop()
        if poller.waiting:
            raise _Interrupted

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
