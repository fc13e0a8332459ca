"""Sending once: the one place that decides what a failed send means.

The Bot API has no idempotency key and no way to ask whether a message arrived. So every
sender whose message must not arrive twice (an answer to a user, a channel post, an admin
notice) follows the same four steps:

1. Claim the send (the sender's own fenced row or record: a token and a deadline, the send
   window ``telegram_bot.client.SEND_WINDOW_SECONDS``), so one attempt at a time sends.
2. ``send_once``: one call, no lock or transaction held.
3. Record the outcome, fenced on the claim, through exactly one of three callbacks:
   - ``sent``: Telegram's answer;
   - ``refused``: Telegram answered that it did not send it, or the request never left this
     machine (``TelegramApiError.reached`` False: the client saw one of httpx's errors raised
     before sending, ``client.core.NOT_SENT``: ``ConnectError``, ``ConnectTimeout``,
     ``PoolTimeout``, ``ProxyError``...). Sending again is safe: a retryable refusal (429,
     5xx, network) goes to a job with ``jobs.services.job_retry_later`` (outside a job) or is
     raised for the job runner's policy (inside one, ``JobRun.will_retry``);
   - ``unknown``: it may have arrived (``reached`` None: httpx's ``WriteError``,
     ``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``..., a proxy's gateway error, an
     unreadable 2xx, or any exception that is not Telegram's). It is never sent again
     automatically (a second copy is worse than a late one): the sender marks it for an
     admin, who decides.
4. An attempt found still claimed after its deadline died in the window: its outcome is
   unknown too (the sender's claim step judges it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from telegram_bot.errors import TelegramApiError
from telegram_bot.redaction import redact

T = TypeVar("T")
R = TypeVar("R")


def send_once(
    send: Callable[[], T],
    *,
    sent: Callable[[T], R],
    refused: Callable[[TelegramApiError], R],
    unknown: Callable[[str, BaseException], R],
) -> R:
    """Call ``send`` once and hand its outcome to exactly one of ``sent``, ``refused`` or
    ``unknown`` (see the module docstring); return what that callback returns.

    ``unknown`` gets a short redacted description and the exception. An exception that is not
    a ``TelegramApiError`` is raised again after ``unknown`` recorded it (unless ``unknown``
    raised an error of its own): it is a bug or a crash, not an answer. The callbacks run
    outside the ``except`` block, so what they raise is not chained to the send's error
    unless they say so (``raise ... from exc``).
    """
    try:
        value = send()
    except TelegramApiError as exc:
        error = exc
    except Exception as exc:  # after the request left, anything may have happened
        unknown(describe(exc), exc)
        raise
    else:
        return sent(value)
    if error.reached is None:
        return unknown(describe(error), error)
    return refused(error)


def describe(exc: BaseException) -> str:
    """What went wrong, for logs, records and admins: class and redacted text, bounded."""
    return f"{type(exc).__name__}: {redact(str(exc))}"[:2000]
