"""Dispatch only: pick the handler for an update. No business logic, no state, no Telegram.

Each app's handlers module (its AppConfig's ``bot_handlers``, ``telegram_bot.features``) exports
``ROUTES``, ``OBSERVERS`` and ``PANEL_ENTRIES``; the router is the explicit, ordered
concatenation of those lists in ``INSTALLED_APPS`` order.
Matching: a command goes to the route of that command (else the ``*`` catch-all); a callback
to the route with the longest matching data prefix; a non-command private message from a user
with an active (or just expired) workflow to the route that owns that workflow; anything else to the
first route for its update type whose chat types match. The pipeline looks the workflow up and
passes its name in: the router itself reads no state.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from django.utils.functional import Promise

from telegram_bot.admins import Role
from telegram_bot.features import handler_modules
from telegram_bot.updates import Update

if TYPE_CHECKING:
    from telegram_bot.pipeline.context import Context
    from telegram_bot.state import KVStore
    from telegram_bot.state.base import Op

Handler = Callable[["Context"], None]
# A counter an observer takes with the update's claim: (key, TTL in ms applied on creation).
ClaimCounter = tuple[str, int | None]
# The one KV commit of a unit (``Context.commit_once``): apply the ops once; False if not.
CommitOnce = Callable[[Sequence["Op"]], bool]


@dataclass(frozen=True)
class Foresight:
    """What an observer will do with an update, declared as data before the update is claimed.

    The observer's one declaration (``Observer.foresee``); the pipeline reads it, never a
    second copy of the observer's logic, and hands it to the handler (``ctx.foresight``).
    ``counters``: the keys the observer adds one to for this update, with the TTL (ms) each
    gets when created; the pipeline increments them in the same atomic step as the update's
    claim (or, where the claim was not a plain one, itself, just before the unit runs) and
    gives the handler their new values (``ctx.counted``, in this order).
    ``acts_at``: per counter, the new value at which the handler does something (None:
    never); below or past it, nothing. Empty: None for every counter.
    ``commit``: the observer's whole work, given the commit to use, when that work is one
    ``commit_once`` (and what the observer does around it, which must not raise once the
    commit is done); None when it does nothing but count.
    ``acts``/``finding``: the handler will act on the update, on ``finding``.
    With every observer of an update foreseen, no counter reaching its ``acts_at`` and no
    routed handler, the pipeline does the update in one KV step (``pipeline.process``).
    """

    counters: tuple[ClaimCounter, ...] = ()
    acts_at: tuple[int | None, ...] = ()
    commit: Callable[[CommitOnce], object] | None = None
    # The handler acts on this update whatever the counters (the one step is out), on what
    # the declaration found (``finding``: the handler reads it, never works it out again).
    acts: bool = False
    finding: object = None

    def __post_init__(self) -> None:
        if self.acts_at and len(self.acts_at) != len(self.counters):
            raise ValueError("acts_at has one value per counter (or none)")

    @property
    def triggers(self) -> tuple[int | None, ...]:
        """``acts_at`` with one value per counter."""
        return self.acts_at or (None,) * len(self.counters)

    def reached(self, counts: Sequence[int] | None) -> bool:
        """True when a counter's new value is the one its handler acts at."""
        return any(
            at is not None and count == at
            for count, at in zip(counts or (), self.triggers, strict=False)
        )


QUIET = Foresight()
# An observer's foresight of an update (it may read the KV store), or None when it cannot tell
# before running (it will act on what it cannot declare); None counts nothing.
Foresee = Callable[[Update, "KVStore"], Foresight | None]
ANY_COMMAND = "*"
ROUTE_UNIT = "route"  # the unit name of the routed handler (observers have their own)
_UNIT_NAME_RE = re.compile(r"^[a-z0-9._-]{1,40}$")


@dataclass(frozen=True)
class Route:
    update_type: str
    handler: Handler
    command: str | None = None
    callback_prefix: str | None = None
    chat_types: frozenset[str] | None = None
    role: Role = Role.USER
    expensive: bool = False
    help: str | Promise = ""
    workflow: str | None = None

    @classmethod
    def on_command(
        cls,
        name: str,
        handler: Handler,
        *,
        help: str | Promise = "",
        role: Role = Role.USER,
        chat_types: tuple[str, ...] | None = None,
        expensive: bool = False,
    ) -> Route:
        return cls(
            "message",
            handler,
            command=name.lower(),
            role=role,
            help=help,
            chat_types=frozenset(chat_types) if chat_types else None,
            expensive=expensive,
        )

    @classmethod
    def on_callback(
        cls, prefix: str, handler: Handler, *, role: Role = Role.USER, expensive: bool = False
    ) -> Route:
        return cls(
            "callback_query", handler, callback_prefix=prefix, role=role, expensive=expensive
        )

    @classmethod
    def on_update(
        cls,
        update_type: str,
        handler: Handler,
        *,
        role: Role = Role.USER,
        chat_types: tuple[str, ...] | None = None,
    ) -> Route:
        return cls(
            update_type,
            handler,
            role=role,
            chat_types=frozenset(chat_types) if chat_types else None,
        )

    @classmethod
    def on_workflow(cls, name: str, handler: Handler, *, role: Role = Role.USER) -> Route:
        """Messages (not commands) from a user whose current workflow is ``name``."""
        return cls("message", handler, workflow=name, role=role)

    def accepts_chat(self, chat_type: str | None) -> bool:
        return self.chat_types is None or chat_type in self.chat_types


@dataclass(frozen=True)
class Observer:
    """A handler that sees every update of its type and chat types, beside the routed one.

    Several observers may observe one update (statistics counts every group message while
    moderation checks it and a command handler answers it). They run in ascending ``order``
    (then in app order), each in isolation, before the routed handler; see ``pipeline``.
    ``name`` is unique: it names the observer's idempotency marker (``upd:<id>:<name>``).

    ``foresee``: the observer's declaration of what it will do with an update, worked out
    once per update before the claim (``Foresight``: its counters, the values it acts at,
    its one commit); the handler reads it as ``ctx.foresight`` and its counters' new values
    as ``ctx.counted``. An observer without it, or whose foresight is None, has the update
    run the ordinary way (claim, units, done-marker).
    """

    name: str
    update_type: str
    handler: Handler
    chat_types: frozenset[str] | None = None
    order: int = 100
    foresee: Foresee | None = None

    @classmethod
    def on(
        cls,
        name: str,
        update_type: str,
        handler: Handler,
        *,
        chat_types: tuple[str, ...] | None = None,
        order: int = 100,
        foresee: Foresee | None = None,
    ) -> Observer:
        if not _UNIT_NAME_RE.match(name) or name == ROUTE_UNIT:
            raise ValueError(f"observer name {name!r}: 1-40 of a-z 0-9 . _ -, not {ROUTE_UNIT!r}")
        chats = frozenset(chat_types) if chat_types else None
        return cls(name, update_type, handler, chats, order, foresee)

    def accepts(self, update: Update) -> bool:
        if update.type != self.update_type:
            return False
        return self.chat_types is None or update.chat_type in self.chat_types


@dataclass(frozen=True)
class PanelEntry:
    """A button of the /panel menu; ``callback_data`` must be routed by the same app."""

    title: str | Promise
    callback_data: str
    order: int = 100
    role: Role = Role.ADMIN


class Router:
    def __init__(
        self,
        routes: list[Route],
        panel_entries: list[PanelEntry] | None = None,
        observers: list[Observer] | None = None,
    ) -> None:
        self.routes = list(routes)
        self.panel_entries = sorted(panel_entries or [], key=lambda entry: entry.order)
        # sorted() is stable: equal orders keep the order the apps declared them in.
        self.observers = sorted(observers or [], key=lambda observer: observer.order)
        self._observers_of: dict[tuple[str, str | None], tuple[Observer, ...]] = {}
        self._default_route_of: dict[tuple[str, str | None], Route | None] = {}
        types = {route.update_type for route in self.routes}
        self._allowed_updates = sorted(types | {obs.update_type for obs in self.observers})
        names = [observer.name for observer in self.observers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"observer names must be unique: {', '.join(duplicates)}")

    def observers_for(self, update: Update) -> tuple[Observer, ...]:
        """The observers of this update, in the order they run (they depend on its type and
        chat type only: worked out once per pair)."""
        kind = (update.type, update.chat_type)
        found = self._observers_of.get(kind)
        if found is None:
            found = self._observers_of[kind] = tuple(
                observer for observer in self.observers if observer.accepts(update)
            )
        return found

    def handles(self, update_type: str) -> bool:
        return update_type in self._allowed_updates

    def match(self, update: Update, *, workflow: str | None = None) -> Route | None:
        command = update.command()
        if command is not None:
            return self._match_command(update, command.name)
        if update.type == "callback_query":
            return self._match_callback(update.callback_data)
        if workflow is not None and update.type == "message":
            owner = next((route for route in self.routes if route.workflow == workflow), None)
            if owner is not None:
                return owner
        kind = (update.type, update.chat_type)
        if kind not in self._default_route_of:  # it depends on these two only
            self._default_route_of[kind] = next(
                (
                    route
                    for route in self.routes
                    if route.update_type == update.type
                    and route.command is None
                    and route.callback_prefix is None
                    and route.workflow is None
                    and route.accepts_chat(update.chat_type)
                ),
                None,
            )
        return self._default_route_of[kind]

    def _match_command(self, update: Update, name: str) -> Route | None:
        fallback = None
        for route in self.routes:
            if route.update_type != "message" or not route.accepts_chat(update.chat_type):
                continue
            if route.command == name:
                return route
            if route.command == ANY_COMMAND and fallback is None:
                fallback = route
        return fallback

    def _match_callback(self, data: str) -> Route | None:
        candidates = [
            route
            for route in self.routes
            if route.callback_prefix is not None and data.startswith(route.callback_prefix)
        ]
        return max(candidates, key=lambda route: len(route.callback_prefix or ""), default=None)

    @property
    def allowed_updates(self) -> list[str]:
        """The update types some route handles, for setWebhook / getUpdates."""
        return list(self._allowed_updates)

    def commands_for(self, role: Role) -> list[Route]:
        """Commands with help text that a sender of ``role`` may use, in routing order."""
        return [
            route
            for route in self.routes
            if route.command not in (None, ANY_COMMAND) and route.help and role >= route.role
        ]

    def panel_for(self, role: Role) -> list[PanelEntry]:
        return [entry for entry in self.panel_entries if role >= entry.role]


_router: Router | None = None
_lock = threading.Lock()


def get_router() -> Router:
    """The router of the installed apps' handlers, built once per process."""
    global _router
    if _router is None:
        with _lock:
            if _router is None:
                _router = build_router(handler_modules())
    return _router


def build_router(modules: Sequence[ModuleType | str]) -> Router:
    routes: list[Route] = []
    entries: list[PanelEntry] = []
    observers: list[Observer] = []
    for name in modules:
        module = import_module(name) if isinstance(name, str) else name
        routes.extend(getattr(module, "ROUTES", []))
        entries.extend(getattr(module, "PANEL_ENTRIES", []))
        observers.extend(getattr(module, "OBSERVERS", []))
    # The catch-all for unknown commands goes last, whichever module declares it.
    routes.sort(key=lambda route: route.command == ANY_COMMAND)
    return Router(routes, entries, observers)
