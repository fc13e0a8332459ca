"""What a handler receives: the update, the sender, and the services it may use."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline import idempotency, reply
from telegram_bot.pipeline.router import ROUTE_UNIT, Foresight, Router
from telegram_bot.pipeline.security import Sender
from telegram_bot.state import KVStore
from telegram_bot.state.base import Op
from telegram_bot.updates import Command, Update

log = logging.getLogger(__name__)


def answer_press(
    client: TelegramClient, update: Update, text: str | None = None, *, alert: bool = False
) -> None:
    """Answer ``update``'s button press, in the webhook's reply when it may go there
    (``reply.py``), else by a call; a no-op for other updates."""
    query = update.callback_query
    if query is None:
        return
    params: dict[str, Any] = {"callback_query_id": query.id}
    if text is not None:
        params["text"] = str(text)
    if alert:
        params["show_alert"] = True
    if not reply.offer(update.update_id, "answerCallbackQuery", params):
        client.answer_callback_query(**params)


@dataclass
class Context:
    update: Update
    sender: Sender
    router: Router
    store: KVStore
    client: TelegramClient
    # Which unit of the update this is (an observer's name, or the routed handler), and
    # whether it is the last one to run: its commit_once then also marks the update done.
    unit: str = ROUTE_UNIT
    last_unit: bool = True
    # Set once commit_once has written this update's done-marker; committed once it ran.
    done_marked: bool = False
    committed: bool = False
    # An observer's declaration for this update (``Observer.foresee``), worked out once by the
    # pipeline; None for the routed handler and for an observer that declared nothing.
    foresight: Foresight | None = None
    # The new values of ``foresight.counters``, in order (the pipeline took them, with the
    # update's claim or just before the unit ran); None when it declared none.
    counted: tuple[int, ...] | None = None

    @property
    def command(self) -> Command | None:
        return self.update.command()

    @property
    def chat_id(self) -> int | None:
        return self.update.chat_id

    @property
    def in_private(self) -> bool:
        return self.update.chat_type == "private"

    def commit_once(self, ops: Sequence[Op]) -> bool:
        """Apply KV ``ops`` and mark this update done, atomically; False if it was done before.

        Use it for effects that live in the KV store (counters): a re-delivered update then
        counts nothing twice. One call per unit: the marker is this unit's, so another
        observer of the same update commits its own effects independently.
        """
        applied = idempotency.commit_once(
            self.store, self.update.update_id, ops, unit=self.unit, finish=self.last_unit
        )
        self.committed = True
        # Not applied: this unit had committed before, and the done-marker in its batch was
        # skipped with the rest, so the pipeline still has to write it.
        self.done_marked = self.last_unit and applied
        return applied

    def reply(self, text: str, **params: Any) -> dict[str, Any]:
        """Send ``text`` to the chat the update came from: in a forum, to the message's topic
        (without the thread id the answer lands in General, away from the command)."""
        if self.chat_id is None:
            raise ValueError("this update has no chat to reply to")
        message = self.update.message
        if message is not None and message.is_topic_message and message.message_thread_id:
            params.setdefault("message_thread_id", message.message_thread_id)
        return self.client.send_message(chat_id=self.chat_id, text=text, **params)

    def answer_callback(self, text: str | None = None, *, alert: bool = False) -> None:
        """Answer the button press (stops the client's spinner); a no-op for other updates.
        Through the webhook, the answer goes in the webhook's own reply (``reply.py``)."""
        answer_press(self.client, self.update, text, alert=alert)

    def answer_callback_quietly(self, text: str | None = None, *, alert: bool = False) -> bool:
        """``answer_callback`` for a press whose work is done (or refused) whatever happens to
        the answer: a query that got too old while Telegram or the work was slow is logged,
        never a reason to send the update to the dead letters. False when it failed."""
        try:
            self.answer_callback(text, alert=alert)
        except TelegramApiError as exc:
            log.info("update %s: the press was not answered: %s", self.update.update_id, exc)
            return False
        return True

    def edit_callback_message(self, text: str, **params: Any) -> None:
        """Replace the text of the message whose button was pressed (an edit that changes
        nothing is success: see the client's edits)."""
        query = self.update.callback_query
        message = query.message if query is not None else None
        if message is None:
            return
        self.client.edit_message_text(
            chat_id=message.chat.id, message_id=message.message_id, text=text, **params
        )
