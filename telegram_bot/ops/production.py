"""The production gate (seed 003, section 29) as real checks: ``manage.py check_production``.

Each check returns a problem (a short sentence) or None. Checks that need the network (asking
Telegram about the bot and its webhook) can be skipped with ``offline=True``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from config.env import WEBHOOK_SECRET_MIN_PRODUCTION
from telegram_bot.admins import check_admin_configuration
from telegram_bot.bot import get_client
from telegram_bot.errors import BotError
from telegram_bot.ops import production_ops
from telegram_bot.ops.health import kv_memory_findings
from telegram_bot.pipeline.router import get_router
from telegram_bot.scheduling import OWNED_PREFIX, declared_schedules
from telegram_bot.state import get_store

DEVELOPMENT_HOSTS = {"localhost", "127.0.0.1", "[::1]"}


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[], str | None]
    network: bool = False


@dataclass(frozen=True)
class CheckResult:
    name: str
    problem: str | None
    detail: str = ""  # what a passed check verified, when it says, or its warning
    warning: bool = False


def run_checks(
    *, offline: bool = False, only: list[str] | None = None, base_url: str | None = None
) -> list[tuple[str, str | None]]:
    """(name, problem or None) for every check, in order."""
    results = check_results(offline=offline, only=only, base_url=base_url)
    return [(result.name, result.problem) for result in results]


def check_results(
    *, offline: bool = False, only: list[str] | None = None, base_url: str | None = None
) -> list[CheckResult]:
    """Run the checks (those named in ``only``, if given); ``base_url`` sends the smoke test's
    update over HTTP to that deployment instead of through this process."""
    results = []
    production_ops.smoke_base_url = base_url
    try:
        for check in CHECKS:
            if (only is not None and check.name not in only) or (
                offline and check.network and only is None
            ):
                continue
            try:
                outcome = check.run()
            except Exception as exc:  # a check that crashes is a failed check, not a crash
                outcome = f"{type(exc).__name__}: {exc}"
            if isinstance(outcome, production_ops.Passed):
                results.append(CheckResult(check.name, None, str(outcome)))
            elif isinstance(outcome, production_ops.Warned):
                results.append(CheckResult(check.name, None, str(outcome), warning=True))
            else:
                results.append(CheckResult(check.name, outcome))
    finally:
        production_ops.smoke_base_url = None
    return results


def _debug_off() -> str | None:
    return "DJANGO_DEBUG is on" if settings.DEBUG else None


def _secret_key() -> str | None:
    if settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY:
        return "DJANGO_SECRET_KEY is the development key"
    return (
        "DJANGO_SECRET_KEY is shorter than 50 characters" if len(settings.SECRET_KEY) < 50 else None
    )


def _allowed_hosts() -> str | None:
    hosts = set(settings.ALLOWED_HOSTS)
    if "*" in hosts:
        return "DJANGO_ALLOWED_HOSTS allows any host"
    return "DJANGO_ALLOWED_HOSTS names no public host" if hosts <= DEVELOPMENT_HOSTS else None


def _tls_proxy() -> str | None:
    if settings.DEBUG:
        return None  # "debug off" fails already
    if not getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        return (
            "DJANGO_BEHIND_TLS_PROXY is off: Django cannot tell HTTPS requests (serve behind a "
            "TLS proxy that sets X-Forwarded-Proto, and set it to true)"
        )
    return None


def _secure_cookies() -> str | None:
    if settings.DEBUG:
        return None
    if not (settings.SESSION_COOKIE_SECURE and settings.CSRF_COOKIE_SECURE):
        return "session and CSRF cookies are not Secure (DJANGO_SECURE_COOKIES)"
    return None


def _hsts() -> str | None:
    if settings.DEBUG:
        return None
    if settings.SECURE_HSTS_SECONDS <= 0:
        return "HSTS is off (DJANGO_HSTS_SECONDS)"
    if not settings.SECURE_SSL_REDIRECT:
        return "plain HTTP is not redirected to HTTPS (DJANGO_SSL_REDIRECT)"
    return None


def _postgres() -> str | None:
    if connection.vendor != "postgresql":
        return f"the database is {connection.vendor}; production runs on PostgreSQL (DATABASE_URL)"
    return None


def _database_migrated() -> str | None:
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        return f"the database does not answer: {exc}"
    return f"{len(pending)} migrations not applied (manage.py migrate)" if pending else None


def _redis() -> str | None:
    if not settings.REDIS_URL:
        return "REDIS_URL is not set: KV state, cache and broker are on the database"
    try:
        get_store().ping()
    except BotError as exc:
        return f"the KV store does not answer: {exc}"
    return None


def _redis_evicts_nothing() -> str | None:
    """Redis's ``maxmemory-policy`` is ``noeviction`` (an evicted done-marker: a re-delivered
    update acts twice); a warning above 80% of ``maxmemory`` or when Redis would not say."""
    try:
        status = get_store().memory_status()
    except BotError as exc:
        return production_ops.Warned(f"could not be checked: the KV store does not answer: {exc}")
    problem, warnings = kv_memory_findings(status)
    if problem:
        return problem
    if warnings:
        return production_ops.Warned("; ".join(warnings))
    if status is None:
        return None  # a KV store that never evicts ("Redis reachable" says REDIS_URL is unset)
    used, limit = status.used_bytes, status.max_bytes
    usage = f"{(used or 0) // 2**20} MiB used" + (f" of {limit // 2**20} MiB" if limit else "")
    return production_ops.Passed(f"maxmemory-policy noeviction, {usage}")


def _bot_configured() -> str | None:
    missing = [
        name
        for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET")
        if not getattr(settings, name)
    ]
    if missing:
        return f"not set: {', '.join(missing)}"
    # The secret is all that stands between the webhook and anyone who posts updates to it.
    if len(settings.TELEGRAM_WEBHOOK_SECRET) < WEBHOOK_SECRET_MIN_PRODUCTION:
        return (
            f"TELEGRAM_WEBHOOK_SECRET is shorter than {WEBHOOK_SECRET_MIN_PRODUCTION} characters "
            '(make one: python3 -c "import secrets; print(secrets.token_urlsafe(48))", then '
            "set_webhook again)"
        )
    return None


def _admin_recovery() -> str | None:
    problems = check_admin_configuration()
    if not settings.OWNER_TELEGRAM_ID:
        problems.append("OWNER_TELEGRAM_ID is not set: no recovery path for the admin list")
    return "; ".join(problems) or None


def _rate_limits() -> str | None:
    limits = (
        settings.RATE_LIMIT_USER_PER_MINUTE,
        settings.RATE_LIMIT_CHAT_PER_MINUTE,
        settings.RATE_LIMIT_EXPENSIVE_PER_MINUTE,
    )
    return "a rate limit is not positive" if min(limits) < 1 else None


def _retry_policy() -> str | None:
    if settings.JOB_RETRY_JITTER <= 0:
        return "JOB_RETRY_JITTER is 0: retries of many jobs would fire in lockstep"
    if settings.JOB_RETRY_JITTER > settings.JOB_RETRY_MAX_DELAY:
        return "JOB_RETRY_JITTER is larger than JOB_RETRY_MAX_DELAY"
    if settings.JOB_MAX_RETRIES < 1:
        return "JOB_MAX_RETRIES is 0: transient Telegram errors would fail jobs at once"
    return None


def _schedules() -> str | None:
    from django_q.models import Schedule

    declared = {OWNED_PREFIX + spec.name for spec in declared_schedules()}
    present = set(
        Schedule.objects.filter(name__startswith=OWNED_PREFIX).values_list("name", flat=True)
    )
    if declared - present or present - declared:
        return "django-q2 schedules differ from the declared ones (manage.py sync_schedules)"
    return None


def _telegram_accepts_token() -> str | None:
    me = get_client().get_me()
    return None if me.get("is_bot") else "getMe did not describe a bot"


def _webhook_registered() -> str | None:
    info = get_client().get_webhook_info()
    if not info.get("url"):
        return "no webhook registered (manage.py set_webhook URL), unless you run runbot"
    wanted = set(get_router().allowed_updates)
    allowed = set(info.get("allowed_updates") or [])
    if allowed and not wanted <= allowed:
        return f"the webhook does not receive {sorted(wanted - allowed)} (run set_webhook again)"
    if info.get("last_error_message"):
        return f"Telegram reports: {info['last_error_message']}"
    return None


# What Telegram sends a webhook registered without allowed_updates: every kind but these.
NOT_SENT_BY_DEFAULT = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


def _webhook_update_types() -> str | None:
    """The webhook receives every update type a route or observer needs. An empty
    ``allowed_updates`` is Telegram's default, which leaves out ``chat_member`` (member joins
    and leaves in groups where the bot is an admin)."""
    info = get_client().get_webhook_info()
    if not info.get("url"):
        return None  # "webhook registered" says so already
    wanted = set(get_router().allowed_updates)
    allowed = set(info.get("allowed_updates") or [])
    missing = wanted - allowed if allowed else wanted & NOT_SENT_BY_DEFAULT
    if missing:
        return f"the webhook does not receive {sorted(missing)} (run set_webhook again)"
    return None


CHECKS = [
    Check("debug off", _debug_off),
    Check("secret key", _secret_key),
    Check("allowed hosts", _allowed_hosts),
    Check("TLS proxy header", _tls_proxy),
    Check("secure cookies", _secure_cookies),
    Check("HSTS and HTTPS redirect", _hsts),
    Check("PostgreSQL", _postgres),
    Check("migrations applied", _database_migrated),
    Check("Redis reachable", _redis),
    Check("Redis never evicts state", _redis_evicts_nothing),
    Check("bot token and webhook secret", _bot_configured),
    Check("admin recovery path", _admin_recovery),
    Check("rate limiting", _rate_limits),
    Check("retry policy bounded", _retry_policy),
    Check("schedules in sync", _schedules),
    Check("worker heartbeat", production_ops.worker_heartbeat),
    Check("backups documented", production_ops.backups_documented),
    Check("smoke test", production_ops.smoke_test),
    Check("Telegram accepts the token", _telegram_accepts_token, network=True),
    Check("webhook registered", _webhook_registered, network=True),
    Check("webhook update types", _webhook_update_types, network=True),
]
