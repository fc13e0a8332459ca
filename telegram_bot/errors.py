"""The error classes of the bot (seed 003 section 21).

Every error says whether retrying can help (`retryable`, or its negation `permanent`), carries a
stable machine `code` for logs and job records, and a short `user_message` that is safe to show
to a Telegram user. The exception text itself is for operators and must never contain secrets.
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

_PERMANENT_STATUSES = frozenset({400, 401, 403, 404})


class BotError(Exception):
    """Base class of every error the bot raises on purpose."""

    retryable: bool = False
    code: str = "internal"
    # Lazy: read in the language of the update (or job) that shows it.
    user_message: str | Promise = gettext_lazy("Something went wrong. Please try again later.")

    def __init__(self, message: str = "", *, user_message: str | Promise | None = None) -> None:
        super().__init__(message or self.code)
        if user_message is not None:
            self.user_message = user_message

    @property
    def permanent(self) -> bool:
        """True when retrying the same operation cannot succeed."""
        return not self.retryable


class AuthenticationError(BotError):
    """The caller could not prove who it is (for example a wrong webhook secret)."""

    code = "authentication"
    user_message = gettext_lazy("Authentication failed.")


class AuthorizationError(BotError):
    """The caller is known but not allowed to do this."""

    code = "authorization"
    user_message = gettext_lazy("You are not allowed to do that.")


class ValidationError(BotError):
    """Input that is malformed or out of range; retrying it unchanged cannot help."""

    code = "validation"
    user_message = gettext_lazy("That input is not valid.")


class RateLimitError(BotError):
    """Too many requests; retry after `retry_after` seconds."""

    retryable = True
    code = "rate_limited"
    user_message = gettext_lazy("Too many requests. Please wait a moment and try again.")

    def __init__(
        self,
        message: str = "",
        *,
        retry_after: float = 1.0,
        user_message: str | Promise | None = None,
    ) -> None:
        super().__init__(message, user_message=user_message)
        self.retry_after = float(retry_after)


class TelegramApiError(BotError):
    """A Bot API call failed: an `ok: false` answer, an unusable answer or a network error.

    `status` is the HTTP status (None for network errors and timeouts). `error_code`,
    `description`, `retry_after` and `migrate_to_chat_id` are what Telegram sent. Retryable:
    network errors, 429 and 5xx. Permanent: 400, 401, 403, 404 and anything else. The message
    names the method only, never the URL (it holds the token).
    """

    code = "telegram_api"
    user_message = gettext_lazy("Telegram could not complete the request. Please try again later.")

    def __init__(
        self,
        method: str,
        *,
        status: int | None = None,
        error_code: int | None = None,
        description: str = "",
        retry_after: float | None = None,
        migrate_to_chat_id: int | None = None,
        retryable: bool | None = None,
        reached: bool | None = True,
    ) -> None:
        details = [str(part) for part in (error_code or status, description) if part]
        super().__init__(" ".join([f"Telegram {method} failed:", *details]))
        # Set after super().__init__: RateLimitError.__init__ (next in a subclass's MRO) would
        # otherwise overwrite retry_after.
        self.method = method
        self.status = status
        self.error_code = error_code
        self.description = description
        self.retry_after = retry_after
        self.migrate_to_chat_id = migrate_to_chat_id
        # True: Telegram answered (and refused); False: the request never left this machine;
        # None: it may have been processed without an answer reaching us (a read timeout, a
        # dropped connection, a proxy's gateway error). Senders must not blindly resend then.
        self.reached = reached
        if retryable is None:
            retryable = _telegram_retryable(error_code or status)
        self.retryable = retryable

    @property
    def chat_unreachable(self) -> bool:
        """True when the target chat will keep refusing (bot blocked or kicked, chat gone)."""
        text = self.description.lower()
        return (self.error_code or self.status) == 403 or "chat not found" in text


class TelegramRateLimitError(TelegramApiError, RateLimitError):
    """Telegram's flood control (429): both a TelegramApiError and a RateLimitError.

    `except RateLimitError` and `except TelegramApiError` both catch it; `retry_after` is always
    a float (seconds) and `retryable` is always True.
    """

    retry_after: float

    code = "telegram_rate_limited"
    user_message = RateLimitError.user_message

    def __init__(
        self,
        method: str,
        *,
        retry_after: float,
        status: int | None = 429,
        error_code: int | None = 429,
        description: str = "Too Many Requests",
        reached: bool | None = True,
    ) -> None:
        super().__init__(
            method,
            status=status,
            error_code=error_code,
            description=description,
            retry_after=float(retry_after),
            retryable=True,
            reached=reached,
        )


class FileTooLargeError(BotError):
    """A file from Telegram is larger than the caller's bound (checked before and while it
    streams)."""

    code = "file_too_large"
    user_message = "The file is too large to open here."


class StateError(BotError):
    """The state layer failed (KV store or database); usually transient."""

    retryable = True
    code = "state"


class StateUnavailableError(StateError):
    """The KV store or the database is unreachable."""

    code = "state_unavailable"


class StateOutcomeUnknownError(StateUnavailableError):
    """A write was sent to the KV store and no answer came (a timeout, a connection lost after
    the command left): the store may have run it, now or later (a hung Redis runs what sits in
    its sockets when it resumes). Callers that keep a copy of the write elsewhere must treat
    it as neither applied nor refused (``stats.unsettled``)."""

    code = "state_outcome_unknown"


class WorkflowError(BotError):
    """A conversation workflow is missing, expired or in the wrong step."""

    code = "workflow"
    user_message = gettext_lazy("This action has expired. Please start again.")


class SchedulerError(BotError):
    """A scheduled job could not be claimed, run or finalised."""

    code = "scheduler"


class InternalError(BotError):
    """A bug or an impossible state; shown to users only as a generic message."""

    code = "internal"


def _telegram_retryable(code: int | None) -> bool:
    if code is None:
        return True  # no answer at all: network error or timeout
    if code in _PERMANENT_STATUSES:
        return False
    return code == 429 or code >= 500
