"""Who is asking, as Telegram vouches for them: a Mini App's ``initData`` and the Login Widget.

Both are checked exactly as Telegram documents them (core.telegram.org/bots/webapps,
"Validating data received via the Mini App"; core.telegram.org/widgets/login, "Checking
authorization"):

- initData: ``secret = HMAC-SHA256(key="WebAppData", msg=bot_token)``,
  ``hash = hex(HMAC-SHA256(key=secret, msg=data_check_string))``;
- Login Widget: ``hash = hex(HMAC-SHA256(key=SHA256(bot_token), msg=data_check_string))``;

where ``data_check_string`` is every received field but ``hash`` as ``key=value``, sorted by
key, joined by ``\\n``. The hashes are compared in constant time, and ``auth_date`` must be at
most ``max_age`` seconds old (and not from the future beyond a small clock skew). A valid
answer made with another bot's token fails the hash check. Replays are refused by the caller
(``webapp.sessions``), which remembers each accepted hash for as long as it could be valid.

Nothing here logs or returns the token or a hash it computed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl

# Telegram's clock and ours may differ a little; an auth_date further ahead than this is forged.
CLOCK_SKEW_SECONDS = 60
MAX_INIT_DATA_LENGTH = 8192
MAX_USER_ID = 2**52 - 1
WIDGET_FIELDS = frozenset(
    {"id", "first_name", "last_name", "username", "photo_url", "auth_date", "hash"}
)


class AuthError(Exception):
    """Refused: the data is malformed, forged, altered, expired or replayed (the message is
    short, safe to show, and names no secret)."""


@dataclass(frozen=True)
class TelegramIdentity:
    """The Telegram user that Telegram vouched for, and the hash that vouched (the replay key)."""

    user_id: int
    first_name: str
    last_name: str
    username: str
    language_code: str
    auth_date: int
    proof: str  # the received hash: remembered to refuse a second use
    start_param: str = ""

    @property
    def full_name(self) -> str:
        return " ".join(part for part in (self.first_name, self.last_name) if part)


def init_data_check(
    init_data: str, *, bot_token: str, max_age: int, now: float | None = None
) -> TelegramIdentity:
    """The user of a Mini App's ``initData`` (the query string Telegram hands the page);
    ``AuthError`` unless it is signed with ``bot_token`` and at most ``max_age`` seconds old."""
    if not isinstance(init_data, str) or not init_data or len(init_data) > MAX_INIT_DATA_LENGTH:
        raise AuthError("initData is missing or too long")
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise AuthError("initData is not a query string") from None
    fields = _unique(pairs)
    received = fields.pop("hash", "")
    secret = hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()
    _check_hash(secret, fields, received)
    auth_date = _check_age(fields.get("auth_date", ""), max_age, now)
    try:
        user = json.loads(fields.get("user", ""))
    except ValueError:
        raise AuthError("initData has no user") from None
    if not isinstance(user, dict):
        raise AuthError("initData has no user")
    return TelegramIdentity(
        user_id=_user_id(user.get("id")),
        first_name=_text(user.get("first_name")),
        last_name=_text(user.get("last_name")),
        username=_text(user.get("username")),
        language_code=_text(user.get("language_code")),
        auth_date=auth_date,
        proof=received,
        start_param=_text(fields.get("start_param"))[:64],
    )


def login_widget_check(
    fields: dict[str, str], *, bot_token: str, max_age: int, now: float | None = None
) -> TelegramIdentity:
    """The user of a Login Widget answer (the fields of its callback); ``AuthError`` unless
    signed with ``bot_token`` and at most ``max_age`` seconds old."""
    if not isinstance(fields, dict) or not set(fields) <= WIDGET_FIELDS:
        raise AuthError("unexpected Login Widget fields")
    data = {key: str(value) for key, value in fields.items()}
    received = data.pop("hash", "")
    secret = hashlib.sha256(bot_token.encode()).digest()
    _check_hash(secret, data, received)
    auth_date = _check_age(data.get("auth_date", ""), max_age, now)
    try:
        user_id = int(data.get("id", ""))
    except ValueError:
        raise AuthError("the Login Widget gave no user id") from None
    return TelegramIdentity(
        user_id=_user_id(user_id),
        first_name=_text(data.get("first_name")),
        last_name=_text(data.get("last_name")),
        username=_text(data.get("username")),
        language_code="",
        auth_date=auth_date,
        proof=received,
    )


def data_check_string(fields: dict[str, str]) -> str:
    """Every field as ``key=value``, sorted by key, one a line (``hash`` already removed)."""
    return "\n".join(f"{key}={fields[key]}" for key in sorted(fields))


def sign(fields: dict[str, str], secret: bytes) -> str:
    return hmac.new(secret, data_check_string(fields).encode(), hashlib.sha256).hexdigest()


def _check_hash(secret: bytes, fields: dict[str, str], received: str) -> None:
    expected = sign(fields, secret)
    if not received or not hmac.compare_digest(expected, received.lower()):
        raise AuthError("the signature does not match")


def _check_age(value: str, max_age: int, now: float | None) -> int:
    try:
        auth_date = int(value)
    except ValueError:
        raise AuthError("auth_date is missing") from None
    current = time.time() if now is None else now
    if auth_date > current + CLOCK_SKEW_SECONDS:
        raise AuthError("auth_date is in the future")
    if current - auth_date > max_age:
        raise AuthError("the login has expired: open the app again")
    return auth_date


def _unique(pairs: list[tuple[str, str]]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for key, value in pairs:
        if key in fields:
            raise AuthError("initData repeats a field")
        fields[key] = value
    return fields


def _user_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_USER_ID:
        raise AuthError("not a Telegram user id")
    return value


def _text(value: object) -> str:
    return value[:256] if isinstance(value, str) else ""
