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
