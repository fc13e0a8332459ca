"""Optional error reporting to Sentry (``SENTRY_DSN``), with nothing secret in what is sent.

Unset ``SENTRY_DSN`` and nothing here runs (sentry-sdk is not even imported). Set, errors and
``ERROR`` log records go to Sentry with: no request bodies (webhook updates hold users'
messages), no local variables (the client holds the token), no personal data, no performance
traces, no httpx breadcrumbs (their URLs carry the token); and every string left in an event is
passed through the same redaction as the logs (anything token-shaped, and the configured
secrets) before it leaves the process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from telegram_bot.redaction import redact


def scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every string in it (keys included) redacted."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(item, secrets) for item in value]
    return value


def _scrubber(secrets: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def before_send(event: Any, hint: Any) -> Any:
        return scrub(event, secrets)

    return before_send


def init_sentry(dsn: str, *, secrets: Iterable[str], release: str, environment: str) -> None:
    import sentry_sdk
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.integrations.httpx import HttpxIntegration

    kept = tuple(secret for secret in secrets if secret)
    sentry_sdk.init(
        dsn=dsn,
        release=release,
        environment=environment,
        integrations=[DjangoIntegration()],
        disabled_integrations=[HttpxIntegration()],
        send_default_pii=False,
        include_local_variables=False,
        max_request_body_size="never",
        traces_sample_rate=0.0,
        before_send=_scrubber(kept),
        before_breadcrumb=_scrubber(kept),
    )
