"""Prometheus instruments of the update path and the Telegram client, applied at small call
sites (one decorator or one call each) so the code they measure stays as it is.

Counters and histograms only: with ``PROMETHEUS_MULTIPROC_DIR`` set (``manage.py serve`` and
the image set it) every process writes its own file there and ``/metrics`` adds them up, so the
gunicorn workers and the django-q2 workers of one machine are counted together. State that lives
in the database (jobs, the backfill, the worker heartbeat) is read when ``/metrics`` is scraped
(config/metrics.py). No Django import at module level: the client uses this module too.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from prometheus_client import Counter, Histogram

from telegram_bot import log_context
from telegram_bot.errors import TelegramApiError, TelegramRateLimitError
from telegram_bot.features import feature_configs

log = logging.getLogger("telegram_bot.transport.webhook")
P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

UPDATES = Counter("tgcp_updates", "Updates handled by the pipeline, by outcome.", ["outcome"])
UPDATE_SECONDS = Histogram(
    "tgcp_update_processing_seconds",
    "Time from an update entering the pipeline to its outcome.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
WEBHOOK_SECONDS = Histogram(
    "tgcp_webhook_request_seconds",
    "Webhook request latency, by HTTP status.",
    ["status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
HANDLER_ERRORS = Counter(
    "tgcp_handler_errors",
    "Handlers that raised (the update became a dead letter), by app.",
    ["app"],
)
TELEGRAM_CALLS = Counter(
    "tgcp_telegram_api_calls", "Bot API calls, by method and result.", ["method", "result"]
)
TELEGRAM_SECONDS = Histogram(
    "tgcp_telegram_api_call_seconds",
    "Bot API call latency, by method.",
    ["method"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
# Each instrument's child per label value, looked up once (``labels`` validates and locks every
# call); the values are few: the outcomes, the webhook's statuses.
_UPDATES_BY_OUTCOME: dict[str, Any] = {}
_WEBHOOK_BY_STATUS: dict[str, Any] = {}


def _child(metric: Any, children: dict[str, Any], label: str) -> Any:
    child = children.get(label)
    if child is None:
        child = children[label] = metric.labels(label)
    return child


EXPECTED_503 = {
    "in_progress": "another worker holds this update",
    "unavailable": "the database or the KV store is unreachable",
}


def observe_updates(
    process: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Any, P], R]:
    """Count each update's outcome and time it; log lines inside carry its update id."""

    @functools.wraps(process)
    def wrapper(data: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        raw_id = (
            data.get("update_id") if isinstance(data, dict) else getattr(data, "update_id", None)
        )
        token = log_context.set_update_id(raw_id if isinstance(raw_id, int) else None)
        started = time.perf_counter()
        outcome_name = "error"
        try:
            outcome = process(data, *args, **kwargs)
            outcome_name = str(getattr(outcome, "value", outcome))
            return outcome
        finally:
            _child(UPDATES, _UPDATES_BY_OUTCOME, outcome_name).inc()
            UPDATE_SECONDS.observe(time.perf_counter() - started)
            log_context.reset_update_id(token)

    return wrapper


def observe_webhook(view: Callable[P, Any]) -> Callable[P, Any]:
    """Time the webhook view by status. An expected 503 (the update is held by another worker,
    or the state is unreachable; Telegram sends it again) is not an error: Django's
    ``ERROR django.request`` line is suppressed and one WARNING says why (for ``unavailable``
    the pipeline's own WARNING, which names the failure, is that line)."""

    @functools.wraps(view)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
        started = time.perf_counter()
        response = view(*args, **kwargs)
        status = str(response.status_code)
        _child(WEBHOOK_SECONDS, _WEBHOOK_BY_STATUS, status).observe(time.perf_counter() - started)
        if response.status_code == 503:
            reason = _error_of(response)
            if reason in EXPECTED_503:
                log_context.expected_failure(args[0])  # type: ignore[arg-type]
                if reason == "in_progress":
                    log.warning(
                        "webhook: 503 %s (%s); Telegram retries after %s s",
                        reason,
                        EXPECTED_503[reason],
                        response.get("Retry-After", "?"),
                    )
        return response

    return wrapper


def _error_of(response: Any) -> str:
    import json

    try:
        body = json.loads(response.content)
    except (ValueError, AttributeError):
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""


def handler_failed(exc: BaseException) -> None:
    """Count a handler that raised, under the app whose code raised it."""
    HANDLER_ERRORS.labels(app_of(exc.__traceback__)).inc()


def app_of(tb: TracebackType | None) -> str:
    """The app of the deepest traceback frame in a handler app (feature apps before the core's
    own modules, which they call into); "unknown" without one."""
    feature, core = None, None
    handler_apps = {config.name for config in feature_configs()}
    while tb is not None:
        package = str(tb.tb_frame.f_globals.get("__name__", "")).partition(".")[0]
        if package == "telegram_bot":
            core = package
        elif package in handler_apps:
            feature = package
        tb = tb.tb_next
    return feature or core or "unknown"


def observe_telegram_call(
    call: Callable[Concatenate[S, str, P], R],
) -> Callable[Concatenate[S, str, P], R]:
    """Count each Bot API call by method and result, and time it."""

    @functools.wraps(call)
    def wrapper(self: S, method: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        started = time.perf_counter()
        result = "ok"
        try:
            return call(self, method, *args, **kwargs)
        except TelegramApiError as exc:
            result = telegram_result(exc)
            raise
        except Exception:
            result = "error"
            raise
        finally:
            TELEGRAM_CALLS.labels(method, result).inc()
            TELEGRAM_SECONDS.labels(method).observe(time.perf_counter() - started)

    return wrapper


def count_webhook_reply(method: str) -> None:
    """A Bot API call sent in the webhook's answer: Telegram makes it, its result is unknown."""
    TELEGRAM_CALLS.labels(method, "webhook_reply").inc()


def telegram_result(exc: TelegramApiError) -> str:
    """rate_limited, network (no HTTP answer), client_error (4xx) or server_error."""
    if isinstance(exc, TelegramRateLimitError):
        return "rate_limited"
    code = exc.error_code or exc.status
    if code is None:
        return "network"
    return "client_error" if 400 <= code < 500 else "server_error"
