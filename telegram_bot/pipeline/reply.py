"""The webhook reply: one Bot API call made in the webhook's own answer.

Telegram executes a method named in a 2xx answer to its webhook request ("Making requests when
getting updates" in the Bot API; not the ``get*`` methods, ``setWebhook``, ``deleteWebhook``,
``close`` or ``logOut``), and the bot never learns the result. So it carries only a call whose
result nothing needs: the answer to a button press (``answerCallbackQuery``), which stops the
spinner on the user's client. That saves one of a press's two calls to Telegram and one round
trip of its latency (``bench/RESULTS.md``, the button press).

The webhook view opens a slot for the update it passes to the pipeline; the first call offered
for that update takes it, and the view answers it when the outcome is final (200). Nothing is
offered outside the webhook (``runbot``'s long polling, a dead letter's replay, jobs): there
the call is made as always. A 503 answer (Telegram delivers the update again) drops the slot.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# Methods a webhook answer may carry here: those whose result nobody reads.
REPLY_METHODS = frozenset({"answerCallbackQuery"})


@dataclass
class Slot:
    update_id: int
    call: dict[str, Any] | None = None


_slot: ContextVar[Slot | None] = ContextVar("webhook_reply", default=None)


@contextmanager
def webhook_reply(update_id: int) -> Iterator[Slot]:
    """Open the reply slot of ``update_id`` for the work done inside."""
    slot = Slot(update_id)
    token = _slot.set(slot)
    try:
        yield slot
    finally:
        _slot.reset(token)


def offer(update_id: int, method: str, params: dict[str, Any]) -> bool:
    """Put the call into the webhook's answer if it may go there; False: make it yourself.
    ``params`` are the call's, None values already dropped."""
    slot = _slot.get()
    if slot is None or slot.update_id != update_id or slot.call is not None:
        return False
    if method not in REPLY_METHODS:
        return False
    slot.call = {"method": method, **params}
    return True
