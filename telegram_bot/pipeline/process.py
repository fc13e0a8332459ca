"""Steps 2-7 of the update path, shared by the webhook and ``runbot``.

Idempotency per ``update_id`` in the KV store (``upd:<id>``): a short claim while a worker
handles the update, then a done-marker kept ``UPDATE_DONE_TTL_HOURS``. A done update is not
processed again; one claimed by another worker is answered IN_PROGRESS (503, Telegram comes
back). What the update is, is worked out once (``Plan``: its observers, its chat allowed or
not, its route, each observer's declaration); its observers then run, then its routed handler,
each once and in isolation (``_handle``); an update whose observers all declare beforehand
what they will do, and that has no routed handler, is done in one KV step instead
(``_finish_foreseen``), from the same declarations.
A handler that raises sends the update to the dead-letter queue and the update counts as done.
The KV store or the database being unreachable is the one UNAVAILABLE case: the claim is
released (by the heartbeat once the store answers, if it does not now) and nothing is marked,
so the update comes back later.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.utils import translation

from telegram_bot import languages
from telegram_bot.admins import Role
from telegram_bot.bot import get_client
from telegram_bot.errors import StateError, StateUnavailableError, TelegramApiError
from telegram_bot.metrics import handler_failed, observe_updates
from telegram_bot.notifications import chat_reachable_again
from telegram_bot.pipeline import idempotency, liveness, security
from telegram_bot.pipeline.context import Context, answer_press
from telegram_bot.pipeline.router import (
    ROUTE_UNIT,
    ClaimCounter,
    CommitOnce,
    Foresee,
    Foresight,
    Handler,
    Observer,
    Route,
    Router,
    get_router,
)
from telegram_bot.redaction import redact
from telegram_bot.state import Increment, KVStore, get_store
from telegram_bot.state.base import Finished, Op
from telegram_bot.state.dead_letters import DeadLetterStore
from telegram_bot.state.workflows import WorkflowStore
from telegram_bot.updates import Update, parse_update

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
def process_update(data: Update | dict[str, Any], *, replay: bool = False) -> Outcome:
    """Handle one Update (parsed at the edge, or JSON data that is parsed here)."""
    update = parse_update(data)
    router = get_router()
    if not router.handles(update.type):
        return Outcome.IGNORED
    plan = Plan.of(update, router)
    store: KVStore | None = None
    claim: dict[str, Any] | None = None
    try:
        store = get_store()
        # A letter from before per-unit markers whose handler committed: its DONE marker
        # alone says so (see _run_units).
        legacy_done = replay and idempotency.is_done(
            idempotency.read_marker(store, update.update_id)
        )
        claim = idempotency.new_claim(store)
        if not replay:
            plan.foresee(store)
        foreseen = None if replay else _finish_foreseen(store, plan, claim)
        if foreseen is not None:
            claimed: tuple[dict[str, Any], Counted | None] | Outcome = foreseen
        else:
            counters = _claim_counters(plan, replay=replay)
            claimed = _claim_counting(
                store, update.update_id, replay=replay, counters=counters, claim=claim
            )
    except UNAVAILABLE_ERRORS as exc:
        log.warning(
            "update %s: state unavailable, asking Telegram to retry: %s",
            update.update_id,
            redact(str(exc)),
        )
        # The claim may have been written with its answer lost (a slow Redis): given up, or
        # the re-delivery would find it "in progress" until its TTL ends.
        if store is not None:
            _release(store, update.update_id, claim)
        return Outcome.UNAVAILABLE
    if isinstance(claimed, Outcome):
        return claimed
    claim, counted = claimed
    try:
        # Every text of the update is in the sender's language (telegram_bot.languages); the
        # heartbeat renews the claim while a slow handler runs (liveness.held).
        with (
            liveness.current().held(store, idempotency.marker_key(update.update_id), claim),
            translation.override(languages.for_update(store, update)),
        ):
            outcome, marked = _handle(
                store, plan, replay=replay, legacy_done=legacy_done, counted=counted
            )
    except UNAVAILABLE_ERRORS as exc:
        log.warning(
            "update %s: state unavailable while handling: %s", update.update_id, redact(str(exc))
        )
        _release(store, update.update_id, claim)
        return Outcome.UNAVAILABLE
    except Exception as exc:
        try:
            dead_letters().put(update.raw, exc)
        except UNAVAILABLE_ERRORS:
            _release(store, update.update_id, claim)
            return Outcome.UNAVAILABLE
        try:
            idempotency.mark_dead(store, update.update_id, claim)
        except UNAVAILABLE_ERRORS:
            if replay:
                return Outcome.UNAVAILABLE  # the letter is the update's only copy: it stays
            # A 503: Telegram delivers the update again, and that run handles it (or letters
            # it again). The letter goes, or it would outlive the update and its replay
            # repeat what the re-delivery did; the claim goes too, for the re-delivery.
            _drop_letter(update.update_id)
            _release(store, update.update_id, claim)
            return Outcome.UNAVAILABLE
        return Outcome.DEAD_LETTER
    if marked:
        return outcome  # the last unit's commit_once wrote the done-marker already
    try:
        if replay and outcome in (Outcome.REFUSED, Outcome.IGNORED) and not legacy_done:
            # The letter stays for the operator, its handler not run: marked dead again, not
            # done, or its next replay would take a done-marker without unit markers for a
            # letter from before them whose handler committed, and run nothing. (A letter that
            # is one of those keeps its done-marker: its handler must not run again.)
            idempotency.mark_dead(store, update.update_id, claim)
            return outcome
        idempotency.mark_done(store, update.update_id)
    except UNAVAILABLE_ERRORS:
        # The effects are committed; a re-delivery meets idempotent effects.
        return Outcome.UNAVAILABLE
    return outcome


def _drop_letter(update_id: int) -> None:
    try:
        dead_letters().drop(update_id)
    except (StateError, *UNAVAILABLE_ERRORS) as exc:  # it stays for the operator to drop
        log.info("update %s: stale dead letter not dropped: %s", update_id, redact(str(exc)))


def dead_letters() -> DeadLetterStore:
    retention_ms = settings.DEAD_LETTER_RETENTION_DAYS * 24 * 3600 * 1000
    return DeadLetterStore(get_store(), retention_ms=retention_ms)


@dataclass
class Plan:
    """What one update is, worked out once and read by every step after: its observers (by
    type and chat type), whether its chat is served (``security.chat_allowed``), its route
    (``router.match``, on first use: a private message's needs the sender's workflow) and each
    observer's declaration (``Observer.foresee``), worked out before the claim."""

    update: Update
    router: Router
    observers: tuple[Observer, ...]
    allowed: bool
    # Per observer with ``foresee``: its declaration (None: it cannot tell). An observer
    # missing here was not foreseen before the claim (a replay, or its foresee raised): its
    # unit works it out itself, in isolation.
    sights: dict[str, Foresight | None] = field(default_factory=dict)
    _route: list[Route | None] = field(default_factory=list)

    @classmethod
    def of(cls, update: Update, router: Router) -> Plan:
        return cls(update, router, router.observers_for(update), security.chat_allowed(update))

    def route(self, store: KVStore) -> Route | None:
        if not self._route:
            self._route.append(
                self.router.match(self.update, workflow=_workflow_name(store, self.update))
            )
        return self._route[0]

    @property
    def takes_counters(self) -> bool:
        """Counters go with the claim unless the security step will refuse the whole update
        (its observers never run), or it is a command addressed by name (whether it is ours
        may take a getMe: the observers count when they run)."""
        if not self.allowed:
            return False
        command = self.update.command()
        return command is None or command.mention is None

    def foresee(self, store: KVStore) -> None:
        """Each observer's declaration, before the claim. One that raises is left out (logged):
        its unit works it out again and, raising again, becomes the update's dead letter."""
        if not self.takes_counters:
            return
        for observer in self.observers:
            if observer.foresee is None:
                continue
            try:
                self.sights[observer.name] = observer.foresee(self.update, store)
            except UNAVAILABLE_ERRORS:
                raise
            except Exception as exc:
                log.info(
                    "update %s: %s not foreseen: %s",
                    self.update.update_id,
                    observer.name,
                    redact(str(exc)),
                )

    def counters(self) -> dict[str, list[ClaimCounter]]:
        """The counters the observers declared for this update, by observer, in their order."""
        return {
            name: list(sight.counters)
            for name, sight in self.sights.items()
            if sight is not None and sight.counters
        }


Counted = dict[str, tuple[int, ...]]
# Under this name the claim takes the sender's rate window counter (security.claim_counters);
# no observer has it ("." is not in observer names).
RATE_COUNTER = "security.rate"


def _handle(
    store: KVStore,
    plan: Plan,
    *,
    replay: bool,
    legacy_done: bool = False,
    counted: Counted | None = None,
) -> tuple[Outcome, bool]:
    """The outcome, and whether the last unit marked the update done itself (commit_once).

    The units of an update are its observers (in their order), then the routed handler.
    Observers see every update of their kind in a served chat, also when the route refuses
    the sender. Each unit runs in isolation: one that raises does not stop the others, and
    the update then goes to the dead-letter queue with the units that finished remembered, so
    its replay runs only the ones that had not. A replay is an operator's decision: it is not
    counted against the sender's rate limits.
    """
    update = plan.update
    route = plan.route(store)
    taken = (counted or {}).get(RATE_COUNTER)
    verdict = security.check(
        store,
        update,
        role=route.role if route else Role.USER,
        expensive=route.expensive if route else False,
        replay=replay,
        counted=taken[0] if taken else None,
        allowed=plan.allowed,
    )
    if isinstance(verdict, security.Refusal) and verdict.whole_update:
        return Outcome.IGNORED, False
    sender = verdict.sender if isinstance(verdict, security.Refusal) else verdict
    if update.type == "message" and update.chat_type == "private" and sender.user_id:
        chat_reachable_again(sender.user_id)
    units: list[tuple[str, Handler]] = [
        (observer.name, observer.handler) for observer in plan.observers
    ]
    outcome = Outcome.PROCESSED
    if isinstance(verdict, security.Refusal):
        _refuse(store, update, verdict)
        outcome = Outcome.REFUSED
    elif route is not None:
        units.append((ROUTE_UNIT, route.handler))
    if not units:
        return (Outcome.IGNORED if outcome == Outcome.PROCESSED else outcome), False
    return outcome, _run_units(
        store,
        plan,
        sender,
        units,
        replay=replay,
        legacy_done=legacy_done,
        counted=counted or {},
    )


def _run_units(
    store: KVStore,
    plan: Plan,
    sender: security.Sender,
    units: list[tuple[str, Handler]],
    *,
    replay: bool,
    legacy_done: bool = False,
    counted: Counted | None = None,
) -> bool:
    """Run the units; True when the last one wrote the update's done-marker. Raises the first
    unit's error (after the others ran) so that the update becomes a dead letter.

    A replay skips the units that finished or committed before (their markers). A letter
    whose update marker is DONE but no unit has a marker was written before unit markers
    existed, by a handler that had committed: nothing of it runs again.
    """
    update = plan.update
    client = get_client()
    foreseers = {observer.name: observer.foresee for observer in plan.observers}
    finished: list[str] = []
    failures: list[Exception] = []
    done_marked = False
    skip: set[str] = set()
    if replay:
        skip = {name for name, _ in units if idempotency.unit_done(store, update.update_id, name)}
        if legacy_done and not skip:
            skip = {name for name, _ in units}
    for index, (name, handler) in enumerate(units):
        if name in skip:
            continue  # it finished (or committed) before the update was dead-lettered
        # After a failure no commit may carry the update's done-marker: the update is to
        # become a dead letter, and a DONE marker would answer its re-delivery "duplicate"
        # even if writing the letter failed.
        last = index == len(units) - 1 and not failures
        context = Context(
            update=update,
            sender=sender,
            router=plan.router,
            store=store,
            client=client,
            unit=name,
            last_unit=last,
            counted=(counted or {}).get(name),
        )
        try:
            foresee = foreseers.get(name)
            if foresee is not None:
                _declare(context, plan, foresee)
            handler(context)
        except UNAVAILABLE_ERRORS:
            raise  # nothing is marked: the re-delivery runs every unit again
        except Exception as exc:
            handler_failed(exc)
            log.error(
                "update %s: handler failed in %s with %s: %s",
                update.update_id,
                _unit_label(name, handler),
                type(exc).__name__,
                redact(str(exc)),
            )
            failures.append(exc)
            if context.committed:
                finished.append(name)  # its effects are in: a replay must not apply them again
            continue
        finished.append(name)
        done_marked = done_marked or (last and context.done_marked)
    if failures:
        if finished:
            idempotency.mark_units_done(store, update.update_id, finished)
        raise failures[0]
    return done_marked


def _declare(context: Context, plan: Plan, foresee: Foresee) -> None:
    """An observer's declaration into its context: the one worked out before the claim, else
    worked out now (a replay; its foresee raised before the claim), and its counters' new
    values, taken now when the claim did not take them (a take-over, a replay)."""
    if context.unit in plan.sights:
        sight = plan.sights[context.unit]
    else:
        sight = foresee(plan.update, context.store)
    context.foresight = sight
    if context.counted is None and sight is not None and sight.counters:
        context.counted = tuple(
            context.store.increment(key, 1, ttl_ms) for key, ttl_ms in sight.counters
        )


def _unit_label(name: str, handler: Handler) -> str:
    module = getattr(handler, "__module__", "?")
    qualname = getattr(handler, "__qualname__", "?")
    return f"{name} ({module}.{qualname})"


def _workflow_name(store: KVStore, update: Update) -> str | None:
    """The sender's workflow, for a non-command message in a private chat (workflows are
    conversations with the bot; group chatter never pays for this lookup)."""
    if update.type != "message" or update.chat_type != "private" or update.command() is not None:
        return None
    if update.chat_id is None or update.user_id is None:
        return None
    workflow = WorkflowStore(store).get(chat_id=update.chat_id, user_id=update.user_id)
    return workflow.name if workflow is not None else None


def _refuse(store: KVStore, update: Update, refusal: security.Refusal) -> None:
    """Tell the sender once per window; silence in groups for everything but button presses."""
    sender, text = refusal.sender, refusal.message
    if not text or not security.may_notify_refusal(store, sender, refusal.reason):
        return
    client = get_client()
    try:
        if update.callback_query is not None:
            answer_press(client, update, text, alert=True)
        elif update.chat_type == "private" and update.chat_id is not None:
            client.send_message(chat_id=update.chat_id, text=text)
    except TelegramApiError as exc:
        log.info("refusal notice to %s not delivered: %s", sender.user_id, exc)


def _claim(store: KVStore, update_id: int, *, replay: bool) -> dict[str, Any] | Outcome:
    """Our claim on the update, or the Outcome that ends processing here (``_claim_counting``
    without counters)."""
    claimed = _claim_counting(store, update_id, replay=replay, counters={})
    return claimed if isinstance(claimed, Outcome) else claimed[0]


def _claim_counting(
    store: KVStore,
    update_id: int,
    *,
    replay: bool,
    counters: dict[str, list[ClaimCounter]],
    claim: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Counted | None] | Outcome:
    """Our claim on the update and the new values of the observers' ``counters`` (by
    observer) taken with it in the same atomic step, or the Outcome that ends processing
    here. The values are None when the claim was not a plain one (the marker expired
    meanwhile, a take-over, a replay): the observers count for themselves then. A replay
    claims the update whatever its marker (done, dead, released, gone), so two replays of one
    letter at once never both run it; its units' markers say what already ran."""
    key = idempotency.marker_key(update_id)
    claim = claim or idempotency.new_claim(store)
    ttl = settings.UPDATE_CLAIM_TTL_SECONDS * 1000
    if replay:
        current = store.get(key)
        if idempotency.is_claimed(current) and not idempotency.owner_gone(store, current):
            return Outcome.IN_PROGRESS  # another worker (or replay) holds it right now
        # From the marker we saw: two replays of one letter at once do not both run it.
        if store.compare_and_set(key, current, claim, ttl):
            return claim, None
        return Outcome.IN_PROGRESS
    done = idempotency.done_key(update_id)
    values = store.set_if_absent_and_increment(
        key, claim, ttl, _increments(counters), absent_key=done
    )
    if values is not None:
        return claim, _counted(counters, values)
    current = idempotency.read_marker(store, update_id)
    if idempotency.is_final(current):
        return Outcome.DUPLICATE
    if (  # expired meanwhile
        current is None
        and store.set_if_absent_and_increment(key, claim, ttl, [], absent_key=done) is not None
    ):
        return claim, None
    # Given up a moment ago by an older version (a marker with a 1 ms TTL; claims are now
    # given up by deleting them): as if absent. It may expire between the read and the
    # compare-and-set: then it is absent.
    if idempotency.is_released(current) and (
        store.compare_and_set(key, current, claim, ttl) or store.set_if_absent(key, claim, ttl)
    ):
        return claim, None
    if idempotency.take_over(store, update_id, current, claim, ttl):  # its process is gone
        return claim, None
    return Outcome.IN_PROGRESS


def _finish_foreseen(
    store: KVStore, plan: Plan, claim: dict[str, Any]
) -> Outcome | tuple[dict[str, Any], Counted] | None:
    """The fast path: an update whose every unit is foreseen (``router.Foresight``) done in
    one KV step (``KVStore.claim_or_finish``) instead of a claim and a commit.

    That is an update with no routed handler and no security check that could refuse it or
    count it (a member's group message, not a command), whose observers all declared
    beforehand what they will do (``Plan.foresee``): nothing, one commit, or something once a
    counter reaches a value. The one step adds the observers' counters and, unless one
    reaches its value, applies the commit with its unit marker and the update's done-marker:
    PROCESSED. A counter that reaches its value leaves the plain claim instead, as
    ``_claim_counting`` would have: the claim and the counters' values, and the units run the
    ordinary way. None when the update is not foreseen, or the step found its marker (a
    duplicate, a claim, a released claim, a unit committed before): the ordinary path, which
    knows those cases, runs it from the start, and nothing was written.
    """
    update = plan.update
    if (
        update.command() is not None
        or security.is_interaction(update)
        or not plan.allowed
        or plan.route(store) is not None
    ):
        return None
    sights: dict[str, Foresight] = {}
    for observer in plan.observers:
        sight = plan.sights.get(observer.name)
        if sight is None or sight.acts:
            return None  # no foresee, it cannot tell, it raised, or it will act
        sights[observer.name] = sight
    if not sights:
        return None
    committers = [(name, sight.commit) for name, sight in sights.items() if sight.commit]
    if len(committers) > 1:
        return None  # two commits: each unit commits on its own, the ordinary way
    counters = plan.counters()
    triggers = [trigger for name in counters for trigger in sights[name].triggers]
    committer = committers[0] if committers else None
    return _finish(store, update, claim, list(sights), counters, triggers, committer)


def _finish(
    store: KVStore,
    update: Update,
    claim: dict[str, Any],
    units: list[str],
    counters: dict[str, list[ClaimCounter]],
    triggers: list[int | None],
    committer: tuple[str, Callable[[CommitOnce], object]] | None,
) -> Outcome | tuple[dict[str, Any], Counted] | None:
    results: list[Finished | None] = []
    compact = idempotency.compact()

    def commit(ops: Sequence[Op]) -> bool:
        if results:
            raise RuntimeError("a foreseen update commits once")
        finished = store.claim_or_finish(
            idempotency.marker_key(update.update_id),
            claim=claim,
            claim_ttl_ms=settings.UPDATE_CLAIM_TTL_SECONDS * 1000,
            done=idempotency.DONE,
            done_ttl_ms=idempotency.done_ttl_ms(),
            increments=_increments(counters),
            triggers=triggers,
            marker_key=(
                None
                if committer is None
                else idempotency.unit_marker_key(update.update_id, committer[0])
            ),
            ops=ops,
            # Compact: the done-marker in its group, and no unit marker beside it (a done
            # update runs no unit again; a letter of it marks its units itself).
            done_key=idempotency.done_key(update.update_id) if compact else None,
            write_marker=not compact,
        )
        results.append(finished)
        return finished is not None and finished.finished

    try:
        if committer is None:
            commit(())
        else:
            committer[1](commit)
    except UNAVAILABLE_ERRORS:
        raise
    except Exception as exc:
        if results and results[0] is not None and results[0].finished:
            # Done, its effects in; what raised after them is the observer's fault.
            handler_failed(exc)
            log.error(
                "update %s: %s failed after its commit with %s: %s",
                update.update_id,
                committer[0] if committer else "?",
                type(exc).__name__,
                redact(str(exc)),
            )
            try:
                # Every unit is done: the others did nothing (foreseen), so a replay of the
                # letter must not run them (anti-flood would count the message again).
                idempotency.mark_units_done(store, update.update_id, units)
                dead_letters().put(update.raw, exc)
            except UNAVAILABLE_ERRORS:
                return Outcome.PROCESSED
            return Outcome.DEAD_LETTER
        if not results or results[0] is None:
            log.info("update %s: foreseen work failed: %s", update.update_id, redact(str(exc)))
            return None  # nothing written: the ordinary path runs it (and letters it)
    if not results or results[0] is None:
        return None
    finished = results[0]
    if finished.finished:
        return Outcome.PROCESSED
    if store.get(idempotency.marker_key(update.update_id)) != claim:
        # The step ran in a transaction the observer rolled back (statistics roll back their
        # add when the commit did not apply: with the database KV store, the claim and the
        # counters went with it). Nothing of it stands: the ordinary way, from the start.
        return None
    return claim, _counted(counters, finished.values)


def _increments(counters: dict[str, list[ClaimCounter]]) -> list[Increment]:
    """The observers' claim counters, each taken once, in their order."""
    return [Increment(key, 1, ttl_ms) for taken in counters.values() for key, ttl_ms in taken]


def _counted(counters: dict[str, list[ClaimCounter]], values: Sequence[int]) -> Counted:
    """The new values of ``_increments(counters)``, back to the observer that took each."""
    counted, start = {}, 0
    for name, taken in counters.items():
        counted[name] = tuple(values[start : start + len(taken)])
        start += len(taken)
    return counted


def _claim_counters(plan: Plan, *, replay: bool) -> dict[str, list[ClaimCounter]]:
    """The counters to take with the claim: the observers' declared ones and the sender's rate
    window; none for a replay (``Plan.takes_counters`` says when else none)."""
    if replay or not plan.takes_counters:
        return {}
    counters = plan.counters()
    if rate := security.claim_counters(plan.update):
        counters[RATE_COUNTER] = rate
    return counters


def _release(store: KVStore, update_id: int, claim: dict[str, Any] | None) -> None:
    """Give the claim up (if still ours) so the re-delivery is not answered IN_PROGRESS: a
    delete, not a write, so a Redis that is full (the likely reason we are here) still takes it.
    If the store does not answer, the heartbeat gives it up once it does (``owe_release``): its
    owner alive, the claim would hold the update until its TTL."""
    if claim is None:
        return
    key = idempotency.marker_key(update_id)
    try:
        store.delete_if_equal(key, claim)
    except (StateError, *UNAVAILABLE_ERRORS):
        liveness.current().owe_release(store, key, claim)
