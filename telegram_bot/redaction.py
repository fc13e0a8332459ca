"""Keep bot tokens (and other configured secrets) out of logs and error texts.

`redact()` replaces anything shaped like a bot token, also inside URLs such as
`/bot123456:AA.../sendMessage`. `TokenRedactingFilter` applies it to every part of a log record
that a handler may render. Attach the filter to *handlers* (a logger's filters do not see records
propagated from child loggers such as `httpx`, which logs full request URLs at INFO).
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
_MIN_SECRET_LENGTH = 8


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return `text` with bot tokens and the given secret values replaced by `[REDACTED]`.

    Secrets shorter than 8 characters are ignored: replacing them would mangle ordinary text.
    """
    text = TOKEN_PATTERN.sub(REDACTED, text)
    for secret in secrets:
        if len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    return text


class TokenRedactingFilter(logging.Filter):
    """A logging filter that scrubs tokens from the message, its arguments and tracebacks.

    The record is rewritten in place: `msg` becomes the formatted, redacted message and `args`
    is cleared; an exception is rendered into `exc_text` (redacted) and `exc_info` dropped so no
    formatter renders the raw traceback again. String values passed with `extra=` are redacted
    too. The filter never rejects a record.
    """

    def __init__(self, name: str = "", secrets: Iterable[str] = ()) -> None:
        super().__init__(name)
        self.secrets = tuple(secrets)

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
            if key not in _STANDARD_ATTRS and isinstance(value, str):
                setattr(record, key, self._redact(value))
        return True

    def _redact(self, text: str) -> str:
        return redact(text, self.secrets)


def _formatted_message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:
        return f"{record.msg!s} {record.args!r}"
