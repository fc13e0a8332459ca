"""Members a chat exempts from its automatic rules, as a core service: the app that keeps the
exemptions (approved members) registers a check, the apps whose automatic rules act on members
(anti-flood, captcha, locks, blocklists) ask ``is_exempt``; neither imports the other.

A check takes (chat id, user id) and answers from memory or a cache: it is asked on the
message path, where a rule is about to act. With none registered, nobody is exempt.
"""

from __future__ import annotations

from collections.abc import Callable

ExemptionCheck = Callable[[int, int], bool]
_checks: dict[str, ExemptionCheck] = {}


def register_exemption(name: str, check: ExemptionCheck) -> None:
    """Add (or replace) the check called ``name``."""
    _checks[name] = check


def unregister_exemption(name: str) -> None:
    _checks.pop(name, None)


def is_exempt(chat_id: int, user_id: int) -> bool:
    """Whether a registered check exempts ``user_id`` from the automatic rules of ``chat_id``."""
    return any(check(chat_id, user_id) for check in list(_checks.values()))


# The other way round: members a chat refuses when they join (a shared ban list), as a core
# service too. The app that keeps the list registers a check and removes the member itself;
# the app that welcomes and challenges joiners asks ``join_refused`` first and leaves them be.
_refusals: dict[str, ExemptionCheck] = {}


def register_join_refusal(name: str, check: ExemptionCheck) -> None:
    """Add (or replace) the check called ``name``: True refuses ``user_id`` in ``chat_id``."""
    _refusals[name] = check


def join_refused(chat_id: int, user_id: int) -> bool:
    """Whether a registered check refuses ``user_id`` joining ``chat_id`` (its app removes
    them): no welcome, no captcha, no goodbye."""
    return any(check(chat_id, user_id) for check in list(_refusals.values()))
