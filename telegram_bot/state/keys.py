"""The declared key families of the KV state.

Every key is ``<family>:<rest>``. A key outside the declared families is refused before it
reaches a backend, so that no module can invent an undocumented namespace (ARCHITECTURE.md
lists them). The core's families are below; a feature app declares its own in its AppConfig
(``key_families``, see ``telegram_bot.features``), and they are added here when it is ready.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

FAMILIES: dict[str, str] = {
    "session": "versioned per-user sessions ({'v': N, 'd': ...})",
    "workflow": "multi-step workflow state, scoped by chat and user, with expiry",
    "counter": "general-purpose atomic counters",
    "rl": "rate-limit windows (per user, per chat)",
    "upd": "update ids being processed (claim) or done (kept 24 h)",
    "dlq": "dead letters: updates whose handler raised (retention, default 7 days)",
    "lock": "short locks and leases",
    "lang": "a user's language (lang:<user id>), remembered for texts sent later, 180 days",
    "live": "process liveness: live:<process id>, refreshed by a heartbeat thread (10 s TTL)",
}
CORE_FAMILIES = frozenset(FAMILIES)
_owners: dict[str, str] = dict.fromkeys(FAMILIES, "telegram_bot")

# Families listed page by page without walking the keyspace: memory and the database keep every
# family in key order anyway; Redis keeps these in a sorted set beside the keys (written in the
# same Lua script as the key). They take get, set, set_if_absent, compare_and_set, delete and
# scan; increments and apply_once ops on them are refused (they would bypass the index).
INDEXED_FAMILIES = frozenset({"dlq"})

# Keys read where the unscoped format kept them too, while a bot-scoped store's move has not
# finished (``KVStore._fallback``): the updates' claims and done-markers, so that an update
# done before the upgrade is a duplicate after it. Prefixes, for ``str.startswith``.
FALLBACK_FAMILIES = ("upd:",)

# A key's own name; kept, it may grow by the bot's id (up to 21 characters, STATE_KEYS_BY_BOT)
# and a store's prefix, within the 512 characters of the database's key column.
MAX_KEY_LENGTH = 480
# At most one ``#``, with text on both sides: ``<group>#<field>`` is a packed key, one field of
# a group of keys that Redis keeps as one hash (``<group>#`` the hash, ``<field>`` its field),
# so that a family written once per message costs a fraction of a Redis key per message. To
# every caller and on the other backends it is a key like any other, except its TTL: a group
# lives as long as its longest-lived field (each write of a field with a TTL extends the group
# to at least that TTL), so a packed key may outlive its own TTL by the group's span. Only
# for keys whose expiry is a retention, never a deadline (done-markers, buffers).
PACK = "#"
_REST_RE = re.compile(r"^[^\s\x00-\x1f\x7f#]+(?:#[^\s\x00-\x1f\x7f#]+)?$")
_PREFIX_RE = re.compile(r"^[^\s\x00-\x1f\x7f#]+(?:#[^\s\x00-\x1f\x7f#]*)?$")


class InvalidKeyError(ValueError):
    """A key or scan prefix that is malformed or outside the declared families."""


def check_key(key: object) -> str:
    """Return ``key`` if it is a well-formed key of a declared family, else raise."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"KV key must be a string, got {type(key).__name__}")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"KV key longer than {MAX_KEY_LENGTH} characters: {key[:40]!r}...")
    family, sep, rest = key.partition(":")
    if not sep or family not in FAMILIES:
        raise InvalidKeyError(
            f"KV key {key[:80]!r} is outside the declared families ({family_list()})"
        )
    if not rest or not _REST_RE.match(rest):
        raise InvalidKeyError(
            f"KV key {key[:80]!r} needs a non-empty part after '{family}:' "
            "without spaces or control characters (and at most one '#', inside it)"
        )
    if PACK in rest and family in INDEXED_FAMILIES:
        raise InvalidKeyError(f"{family}: keys are indexed and cannot be packed ('#')")
    return key


def check_prefix(prefix: object) -> str:
    """A scan prefix must name a declared family (``stats:`` or ``stats:-100:``)."""
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"scan prefix must be a string, got {type(prefix).__name__}")
    family, sep, rest = prefix.partition(":")
    if not sep or family not in FAMILIES:
        raise InvalidKeyError(
            f"scan prefix {prefix[:80]!r} must start with a declared family ({family_list()})"
        )
    if rest and not _PREFIX_RE.match(rest):
        raise InvalidKeyError(
            f"scan prefix {prefix[:80]!r} contains spaces, control characters or a second '#'"
        )
    return prefix


def declare_families(owner: str, families: Mapping[str, str]) -> None:
    """Add an app's key families; a family belongs to one app (declaring it again, by the
    same app, changes nothing)."""
    for name, meaning in families.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", name):
            raise ValueError(f"key family {name!r} of {owner}: 1-31 of a-z 0-9 _")
        if _owners.get(name, owner) != owner:
            raise ValueError(f"key family {name!r} of {owner} is already {_owners[name]}'s")
        _owners[name] = owner
        FAMILIES[name] = meaning


def family_owner(name: str) -> str | None:
    return _owners.get(name)


def family_list() -> str:
    return ", ".join(f"{name}:" for name in FAMILIES)


def family_of(key: str) -> str:
    """The family of a checked key or prefix (``dlq`` for ``dlq:42``)."""
    return key.partition(":")[0]


def check_op_key(key: object) -> str:
    """``check_not_indexed(check_key(key))`` with a short way for the well-formed key (a
    counted message checks about a dozen)."""
    if type(key) is str and len(key) <= MAX_KEY_LENGTH:
        family, sep, rest = key.partition(":")
        if sep and family in FAMILIES and family not in INDEXED_FAMILIES and _REST_RE.match(rest):
            return key
    return check_not_indexed(check_key(key))


def packed(key: str) -> bool:
    """Whether a checked key is a packed key (``<group>#<field>``, see ``PACK``)."""
    return PACK in key


def check_not_indexed(key: str) -> str:
    """Refuse an increment or apply_once op on a key of an indexed family."""
    if family_of(key) in INDEXED_FAMILIES:
        raise InvalidKeyError(
            f"{family_of(key)}: keys are indexed; write them with set, set_if_absent, "
            "compare_and_set or delete"
        )
    return key
