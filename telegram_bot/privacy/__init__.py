"""Personal data: what the installed apps hold about one Telegram user, its export, its erasure.

Every app names a ``privacy`` module in its ``FeatureConfig`` (the core's is
``telegram_bot.privacy.core``). The module declares

- ``MODELS``: ``{"app_label.Model": what it holds about a person}``, its tables with personal data;
- ``KEY_FAMILIES``: ``{"family": what it holds}``, its KV key families with personal data;
- ``NOT_PERSONAL``: ``{"app_label.Model" or "family:": why not}``, everything else it owns;

and offers ``export(user_id, store) -> dict``, ``erase(subject, store) -> dict[str, int]``
(idempotent: run again after a crash half-way, it finishes the work) and optionally
``purge(store) -> dict[str, int]`` (the retention settings) and ``erasure_blocked(user_id) ->
str | None``: why the person cannot be erased yet (work about them that must finish first, such
as a ban waiting out Telegram's rate limit, which the erasure would otherwise cancel).
``tests/privacy`` fails when a model or key family of an installed app is declared nowhere,
so a new app that stores personal data cannot skip its hooks.

An erasure replaces the user, where a figure must keep counting (statistics, warnings, the
audit log), by an anonymous id of its own: ``ANONYMOUS_BASE`` plus a random number, drawn once
per erasure and kept in the run's KV record (``lock:erase:<subject>``) only until the run
finishes, so nothing links it back to the user afterwards. The run record is named by an
HMAC of the user id, not the id; it and the per-step markers under it are deleted last.

What the person did as an admin or moderator (the audit log's entries they acted in, the
warnings they gave, a moderation job they queued) stays accountable instead: under their
``pseudonym``, an HMAC of the id under the installation's secret key, the same for every
erasure of the person. It names nobody by itself; an operator who knows the id (and has the
key) finds the actions again. Apps replace only the fields that hold the person (ids and
names in their columns), never a number found in free text.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import import_module
from types import ModuleType
from typing import Any

from django.apps import apps
from django.conf import settings

from telegram_bot import ids
from telegram_bot.audit import Actor, audit_record
from telegram_bot.features import feature_configs
from telegram_bot.state import KVStore, get_store
from telegram_bot.state.keys import FAMILIES

# Telegram user ids have at most 52 significant bits (``ids.USER_ID_MAX``); the anonymous ids
# are 2**52..2**53, above every one of them and still exact as a JSON number in JavaScript.
ANONYMOUS_BASE = ids.USER_ID_MAX + 1
ERASE_ACTION = "privacy_erase"
EXPORT_ACTION = "privacy_export"
RUN_PREFIX = "lock:erase:"
CONFIRM_PREFIX = "lock:forget:"
RUN_TTL_MS = 30 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Subject:
    """Whom an erasure is about, and what replaces them where a figure must stay."""

    user_id: int
    anonymous_id: int
    marker_prefix: str  # KV markers of this run's steps: ``<prefix><step>``
    resumed: bool = False  # the run a crashed attempt left (its anonymous id, its markers)

    def marker(self, step: str) -> str:
        return f"{self.marker_prefix}{step}"

    @property
    def pseudonym(self) -> int:
        """Their stand-in where what they did as an admin or moderator is kept."""
        return pseudonym(self.user_id)


class ErasureDeferred(Exception):
    """The erasure did not start: an app holds work about the person that must finish first
    (``erasure_blocked``). Nothing was erased; the reasons are for operators."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


@dataclass(frozen=True)
class ErasureResult:
    counts: dict[str, dict[str, int]]
    audit_id: int | None

    @property
    def summary(self) -> str:
        return summarise(self.counts)


def check_user_id(value: object) -> int:
    """A person's Telegram user id from a form or a command argument (``ids.parse_person_id``:
    ASCII digits, 1..2**52-1, not one of Telegram's service accounts, whose id stands for many
    people: erasing it would anonymise every anonymous admin's entries); ValueError says why."""
    return ids.parse_person_id(value)


def new_anonymous_id() -> int:
    return ANONYMOUS_BASE + secrets.randbelow(2**52)


def pseudonym(user_id: int) -> int:
    """The stable stand-in for ``user_id`` in the records of what they did as an admin or
    moderator, once they are erased: in the anonymous ids' range (2**52..2**53, above every
    Telegram id), derived from an HMAC of the id under ``SECRET_KEY``, so every erasure of the
    person gives the same one (while the key stays) and it cannot be read back into the id
    without the key and the id itself. Unlike the erasure's anonymous id, it is meant to be
    found again: accountability outlives the name."""
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"pseudonym:{user_id}".encode(), hashlib.sha256
    ).digest()
    return ANONYMOUS_BASE + int.from_bytes(digest[:8], "big") % 2**52


def is_anonymous(user_id: int | None) -> bool:
    return user_id is not None and user_id >= ANONYMOUS_BASE


# --- the registry --------------------------------------------------------------------------
def privacy_modules() -> list[tuple[str, ModuleType]]:
    """``(app label, privacy module)`` of every installed app that declares one."""
    return [
        (config.label, import_module(config.privacy))
        for config in feature_configs()
        if config.privacy
    ]


# Field names that hold a person: a model with one cannot be declared NOT_PERSONAL.
PERSON_FIELD = re.compile(
    r"^(user_id|username|user_name|display_name|first_name|last_name|telegram_id"
    r"|actor_id|actor_name|target_id|target_name|author_id|author_name|moderator_id"
    r"|member_id|requester_id)$"
)


def coverage_problems() -> list[str]:
    """What the privacy declarations miss: a model of an app, or a KV key family, that no
    privacy module declares (personal or not), a declared name that does not exist, or a
    model declared not personal with a field naming a person."""
    personal: set[str] = set()
    not_personal: set[str] = set()
    for _label, module in privacy_modules():
        personal |= {*module.MODELS, *module.KEY_FAMILIES}
        not_personal |= {name.removesuffix(":") for name in module.NOT_PERSONAL}
    declared = personal | not_personal
    problems = []
    for config in feature_configs():
        for model in config.get_models():
            label = model._meta.label
            if label not in declared:
                problems.append(f"model {label} is declared in no privacy module")
            elif label not in personal:
                fields = [f.name for f in model._meta.get_fields() if PERSON_FIELD.match(f.name)]
                if fields:
                    problems.append(f"model {label} is 'not personal' but has {fields}")
    problems += [
        f"key family {family}: is declared in no privacy module"
        for family in FAMILIES
        if family not in declared
    ]
    for name in sorted(declared):
        if "." in name:
            try:
                apps.get_model(name)
            except LookupError:
                problems.append(f"{name} is declared but is no model")
        elif name not in FAMILIES:
            problems.append(f"{name}: is declared but is no key family")
    return problems


# --- export --------------------------------------------------------------------------------
def export_user(user_id: int, *, store: KVStore | None = None) -> dict[str, Any]:
    """Everything the installed apps hold about ``user_id``, one section per app."""
    store = store or get_store()
    return {
        "telegram_user_id": user_id,
        "generated_at": datetime.now(UTC).isoformat(),
        "apps": {label: module.export(user_id, store) for label, module in privacy_modules()},
    }


# --- erasure -------------------------------------------------------------------------------
def erase_user(
    user_id: int,
    *,
    actor: Actor,
    source: str,
    update_id: int | None = None,
    store: KVStore | None = None,
) -> ErasureResult:
    """Erase or anonymise everything about ``user_id`` in every app, then record it in the
    audit log (the counts, not the data). Idempotent; after a crash, calling it again resumes
    with the same anonymous id and completes the work. Raises ``ErasureDeferred``, having
    erased nothing, while an app holds work about the person that must finish first."""
    reasons = erasure_blockers(user_id)
    if reasons:
        raise ErasureDeferred(reasons)
    store = store or get_store()
    subject = start_run(store, user_id)
    counts: dict[str, dict[str, int]] = {}
    try:
        for label, module in privacy_modules():
            done = {name: number for name, number in module.erase(subject, store).items() if number}
            if done:
                counts[label] = done
    except ErasureDeferred:
        # The core's erase (the first) found a blocker that came after the check above: it
        # erased nothing. A run started here goes, so that nothing waits on it (join
        # requests do); a crashed run being resumed stays, with its anonymous id.
        if not subject.resumed:
            finish_run(store, subject)
        raise
    entry = audit_record(
        action=ERASE_ACTION,
        actor=actor,
        source=source,
        detail=summarise(counts) or "nothing was held",
        update_id=update_id,
    )
    finish_run(store, subject)
    return ErasureResult(counts=counts, audit_id=entry.pk if entry else None)


def erasure_blockers(user_id: int) -> list[str]:
    """Why ``user_id`` cannot be erased yet, one reason per app that says so (none: it can)."""
    reasons = []
    for _label, module in privacy_modules():
        blocked = getattr(module, "erasure_blocked", None)
        reason = blocked(user_id) if blocked is not None else None
        if reason:
            reasons.append(reason)
    return reasons


def subject_digest(user_id: int) -> str:
    """The run's name: an HMAC of the id, so the KV key does not spell the id out."""
    return hmac.new(
        settings.SECRET_KEY.encode(), f"privacy:{user_id}".encode(), hashlib.sha256
    ).hexdigest()[:32]


def start_run(store: KVStore, user_id: int) -> Subject:
    """The run of this user's erasure: a new one, or the one a crashed attempt left."""
    key = f"{RUN_PREFIX}{subject_digest(user_id)}"
    fresh = {"anon": new_anonymous_id(), "started": int(time.time())}
    created = store.set_if_absent(key, fresh, RUN_TTL_MS)
    run = store.get(key) or fresh
    return Subject(
        user_id=user_id,
        anonymous_id=int(run["anon"]),
        marker_prefix=f"{key}:",
        resumed=not created,
    )


# An erasure takes seconds to minutes; a run record older than this is one that crashed and
# waits to be resumed (which scans everything again), not one that is scanning now.
RUNNING_SECONDS = 3600


def erasure_running(store: KVStore, user_id: int) -> bool:
    """Whether an erasure of ``user_id`` has started (within ``RUNNING_SECONDS``) and not
    finished (its run record). A writer that stores something about a person checks this
    after its last write: if it is True, the erasure may have scanned past the write, and the
    writer takes it back itself."""
    run = store.get(f"{RUN_PREFIX}{subject_digest(user_id)}")
    if not isinstance(run, dict):
        return False
    return time.time() - int(run.get("started") or 0) < RUNNING_SECONDS


def finish_run(store: KVStore, subject: Subject) -> None:
    for key in list(store.scan_all(subject.marker_prefix)):
        store.delete(key)
    for key in list(store.scan_all(CONFIRM_PREFIX)):
        value = store.get(key)
        if isinstance(value, dict) and value.get("user") == subject.user_id:
            store.delete(key)
    store.delete(subject.marker_prefix.removesuffix(":"))


def summarise(counts: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{label}: " + ", ".join(f"{name} {number}" for name, number in sorted(done.items()))
        for label, done in counts.items()
    )


# --- retention -----------------------------------------------------------------------------
def purge_expired_data(store: KVStore | None = None) -> dict[str, dict[str, int]]:
    """Run every app's retention purge (its ``purge`` hook); what each removed."""
    store = store or get_store()
    return {
        label: module.purge(store)
        for label, module in privacy_modules()
        if hasattr(module, "purge")
    }


# --- finding a user in stored values -------------------------------------------------------
def mentions(value: Any, user_id: int) -> bool:
    """True when a stored JSON value holds ``user_id``: as a number, or as a whole number in a
    string (``"tg:42"``, ``"42"``), at any depth."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value == user_id
    if isinstance(value, str):
        return re.search(rf"(?<![0-9]){user_id}(?![0-9])", value) is not None
    if isinstance(value, dict):
        return any(mentions(k, user_id) or mentions(v, user_id) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(mentions(item, user_id) for item in value)
    return False


def key_names(key: str, user_id: int) -> bool:
    """True when one ``:``-separated part of ``key`` is ``user_id``."""
    return str(user_id) in key.split(":")


def keys_naming(store: KVStore, prefix: str, user_id: int) -> Iterator[str]:
    """The keys under ``prefix`` with ``user_id`` as one of their parts."""
    return (key for key in store.scan_all(prefix) if key_names(key, user_id))


def values_mentioning(store: KVStore, prefix: str, user_id: int) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` under ``prefix`` whose key or value holds ``user_id`` (reads in pages)."""
    for page in _pages(store.scan_all(prefix), 200):
        for key, value in zip(page, store.get_many(page), strict=True):
            if value is not None and (key_names(key, user_id) or mentions(value, user_id)):
                yield key, value


def delete_keys(store: KVStore, keys: Iterable[str]) -> int:
    deleted = 0
    for key in list(keys):
        store.delete(key)
        deleted += 1
    return deleted


def _pages(keys: Iterable[str], size: int) -> Iterator[list[str]]:
    page: list[str] = []
    for key in keys:
        page.append(key)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page
