"""Steps 2-7 of the update path, shared by the webhook and ``runbot``.

Idempotency per ``update_id`` in the KV store (``upd:<id>``): a short claim while a worker
handles the update, then a done-marker kept ``UPDATE_DONE_TTL_HOURS``. A done update is not
processed again; one claimed by another worker is answered IN_PROGRESS (503, Telegram comes
back). A handler that raises sends the update to the dead-letter queue and the update counts
as done. The KV store or the database being unreachable is the one UNAVAILABLE case: the claim
is released and nothing is marked, so the update comes back later.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError

from telegram_bot import idempotency, security
from telegram_bot.admins import Role
from telegram_bot.bot import bot_username, get_client
from telegram_bot.context import Context
from telegram_bot.errors import StateError, StateUnavailableError, TelegramApiError
from telegram_bot.metrics import handler_failed, observe_updates
from telegram_bot.notifications import chat_reachable_again
from telegram_bot.redaction import redact
from telegram_bot.router import Route, get_router
from telegram_bot.state import KVStore, get_store
from telegram_bot.state.dead_letters import DeadLetterStore
from telegram_bot.state.workflows import WorkflowStore
from telegram_bot.updates import HANDLED_TYPES, Update, parse_update

log = logging.getLogger(__name__)
UNAVAILABLE_ERRORS = (StateUnavailableError, OperationalError, InterfaceError)


class Outcome(enum.Enum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"
    IGNORED = "ignored"
    REFUSED = "refused"
    DEAD_LETTER = "dead_letter"
    IN_PROGRESS = "in_progress"
    UNAVAILABLE = "unavailable"

    @property
    def final(self) -> bool:
        """True when Telegram should not send the update again."""
        return self not in (Outcome.IN_PROGRESS, Outcome.UNAVAILABLE)


@observe_updates
def process_update(data: dict[str, Any], *, replay: bool = False) -> Outcome:
    """Handle one Update (already shape-checked by the caller or checked here)."""
    update = parse_update(data)
    if update.type not in HANDLED_TYPES:
        return Outcome.IGNORED
    try:
        store = get_store()
        claim = _claim(store, update.update_id, replay=replay)
    except UNAVAILABLE_ERRORS as exc:
        log.warning(
            "update %s: state unavailable, asking Telegram to retry: %s",
            update.update_id,
            redact(str(exc)),
        )
        return Outcome.UNAVAILABLE
    if isinstance(claim, Outcome):
        return claim
    try:
        outcome, marked = _handle(store, update, replay=replay)
    except UNAVAILABLE_ERRORS as exc:
        log.warning(
            "update %s: state unavailable while handling: %s", update.update_id, redact(str(exc))
        )
        _release(store, update.update_id, claim)
        return Outcome.UNAVAILABLE
    except Exception as exc:
        handler_failed(exc)
        log.error(
            "update %s: handler failed with %s: %s",
            update.update_id,
            type(exc).__name__,
            redact(str(exc)),
        )
        try:
            dead_letters().put(update.raw, exc)
        except UNAVAILABLE_ERRORS:
            _release(store, update.update_id, claim)
            return Outcome.UNAVAILABLE
        try:
            idempotency.mark_dead(store, update.update_id, claim)
        except UNAVAILABLE_ERRORS:
            return Outcome.UNAVAILABLE  # the letter is kept; the claim expires on its own
        return Outcome.DEAD_LETTER
    if marked:
        return outcome  # the handler's commit_once wrote the done-marker already
    try:
        idempotency.mark_done(store, update.update_id)
    except UNAVAILABLE_ERRORS:
        # The effects are committed; a re-delivery meets idempotent effects.
        return Outcome.UNAVAILABLE
    return outcome


def dead_letters() -> DeadLetterStore:
    retention_ms = settings.DEAD_LETTER_RETENTION_DAYS * 24 * 3600 * 1000
    return DeadLetterStore(get_store(), retention_ms=retention_ms)


def _handle(store: KVStore, update: Update, *, replay: bool) -> tuple[Outcome, bool]:
    """The outcome, and whether the handler marked the update done itself (commit_once).

    A replay is an operator's decision: it is not counted against the sender's rate limits.
    """
    if not security.chat_allowed(update) or not _addressed_to_us(update):
        return Outcome.IGNORED, False
    sender = security.identify(update)
    if update.type == "message" and update.chat_type == "private" and sender.user_id:
        chat_reachable_again(sender.user_id)
    if not replay and security.over_rate_limit(store, update, sender):
        _refuse(store, update, sender, "rate", "Too many requests. Please wait a minute.")
        return Outcome.REFUSED, False
    router = get_router()
    route = router.match(update, workflow=_workflow_name(store, update))
    if route is None:
        return Outcome.IGNORED, False
    refusal = _route_refusal(store, route, sender, replay=replay)
    if refusal:
        _refuse(store, update, sender, *refusal)
        return Outcome.REFUSED, False
    context = Context(update=update, sender=sender, router=router, store=store, client=get_client())
    route.handler(context)
    return Outcome.PROCESSED, context.done_marked


def _addressed_to_us(update: Update) -> bool:
    """False for ``/command@OtherBot``: in groups, commands for other bots are not ours."""
    command = update.command()
    if command is None or command.mention is None:
        return True
    ours = bot_username()
    return ours is None or command.mention.lower() == ours.lower()


def _workflow_name(store: KVStore, update: Update) -> str | None:
    """The sender's workflow, for a non-command message in a private chat (workflows are
    conversations with the bot; group chatter never pays for this lookup)."""
    if update.type != "message" or update.chat_type != "private" or update.command() is not None:
        return None
    if update.chat_id is None or update.user_id is None:
        return None
    workflow = WorkflowStore(store).get(chat_id=update.chat_id, user_id=update.user_id)
    return workflow.name if workflow is not None else None


def _route_refusal(
    store: KVStore, route: Route, sender: security.Sender, *, replay: bool = False
) -> tuple[str, str] | None:
    if route.role > Role.USER and sender.role < route.role:
        return ("role", "This is for admins only.")
    if route.expensive and not replay and security.over_expensive_limit(store, sender):
        return ("expensive", "Please wait a minute before using this again.")
    return None


def _refuse(
    store: KVStore, update: Update, sender: security.Sender, reason: str, text: str
) -> None:
    """Tell the sender once per window; silence in groups for everything but button presses."""
    if not security.may_notify_refusal(store, sender, reason):
        return
    client = get_client()
    try:
        if update.type == "callback_query":
            client.answer_callback_query(
                callback_query_id=update.payload["id"], text=text, show_alert=True
            )
        elif update.chat_type == "private" and update.chat_id is not None:
            client.send_message(chat_id=update.chat_id, text=text)
    except TelegramApiError as exc:
        log.info("refusal notice to %s not delivered: %s", sender.user_id, exc)


def _claim(store: KVStore, update_id: int, *, replay: bool) -> dict[str, Any] | Outcome | None:
    """Our claim on the update; None for a replay of an update whose handler had committed
    (its DONE marker stays, so commit_once will not apply its effects again); or the Outcome
    that ends processing here."""
    key = idempotency.marker_key(update_id)
    claim = idempotency.new_claim()
    ttl = settings.UPDATE_CLAIM_TTL_SECONDS * 1000
    if replay:
        current = store.get(key)
        if idempotency.is_done(current):
            return None
        if idempotency.is_claimed(current):
            return Outcome.IN_PROGRESS  # another worker (or replay) holds it right now
        # From the marker we saw: two replays of one letter at once do not both run it.
        if store.compare_and_set(key, current, claim, ttl):
            return claim
        return Outcome.IN_PROGRESS
    if store.set_if_absent(key, claim, ttl):
        return claim
    current = store.get(key)
    if idempotency.is_final(current):
        return Outcome.DUPLICATE
    if current is None and store.set_if_absent(key, claim, ttl):  # expired meanwhile
        return claim
    return Outcome.IN_PROGRESS


def _release(store: KVStore, update_id: int, claim: dict[str, Any] | None) -> None:
    """Give the claim up (if still ours) so the re-delivery is not answered IN_PROGRESS."""
    if claim is None:
        return
    try:
        store.compare_and_set(idempotency.marker_key(update_id), claim, {"s": "released"}, 1)
    except (StateError, *UNAVAILABLE_ERRORS):
        pass  # it expires on its own
