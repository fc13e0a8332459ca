"""Keep bot tokens (and other configured secrets) out of logs and error texts.

`redact()` replaces anything shaped like a bot token, also inside URLs such as
`/bot123456:AA.../sendMessage`, and every configured secret (the bot token, the webhook secret,
the metrics token, the secret key) whatever its length: a short secret is a weak one, not one
that may be shown. `TokenRedactingFilter` applies it to every part of a log record that a handler
may render. Attach the filter to *handlers* (a logger's filters do not see records propagated
from child loggers such as `httpx`, which logs full request URLs at INFO).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"

# `<bot id>:<secret>` as wide as config.env accepts a token; the colon may be percent-encoded
# when the token sits in a query string.
TOKEN_PATTERN = re.compile(r"(?<![0-9])\d{1,20}(?::|%3[Aa])[A-Za-z0-9_-]{20,}")

# Attributes every LogRecord has; anything else came from `extra=` and is scrubbed too.
_STANDARD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}
# Values a JSON log line writes as they are; any other `extra=` value is written as its text.
_PLAIN_TYPES = (int, float, bool, type(None))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """Return `text` with bot tokens and secret values replaced by `[REDACTED]`: `secrets`, or
    by default the configured ones (`configured_secrets()`), of any length."""
    text = TOKEN_PATTERN.sub(REDACTED, text)
    values = configured_secrets() if secrets is None else secrets
    # The longest first: a secret that holds another is replaced whole.
    for secret in sorted({value for value in values if value}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def configured_secrets() -> tuple[str, ...]:
    """The secrets in the settings (none before the settings are configured)."""
    from django.conf import settings

    if not settings.configured:
        return ()
    names = ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "METRICS_TOKEN", "SECRET_KEY")
    return tuple(str(getattr(settings, name, "") or "") for name in names)


class TokenRedactingFilter(logging.Filter):
    """A logging filter that scrubs tokens from the message, its arguments and tracebacks.

    The record is rewritten in place: `msg` becomes the formatted, redacted message and `args`
    is cleared; an exception is rendered into `exc_text` (redacted) and `exc_info` dropped so no
    formatter renders the raw traceback again. String values passed with `extra=` are redacted
    too. The filter never rejects a record.
    """

    def __init__(self, name: str = "", secrets: Iterable[str] | None = None) -> None:
        super().__init__(name)
        self.secrets = None if secrets is None else tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact `record` in place and let it through."""
        record.msg = self._redact(_formatted_message(record))
        record.args = None
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        for key, value in list(record.__dict__.items()):
            if key in _STANDARD_ATTRS or isinstance(value, _PLAIN_TYPES):
                continue
            # An object (Django's `request`) is rendered as its text, redacted like a string.
            setattr(record, key, self._redact(value if isinstance(value, str) else str(value)))
        return True

    def _redact(self, text: str) -> str:
        return redact(text, self.secrets)


def _formatted_message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:
        return f"{record.msg!s} {record.args!r}"
