"""Django settings, from the one validated ``Environment`` (``config/env.py``).

A bad value raises ``config.env.ConfigError``; ``manage.py`` and the WSGI entry point turn it
into one line on stderr and exit code 2. The variables are listed in ``.env.example``.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl

from django.utils.translation import gettext_lazy

from config.env import (
    DEVELOPMENT_SECRET_KEY,
    SITE_LANGUAGES,
    ConfigError,
    check_database_url,
    generated_secret_key,
    read_environment,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
env = read_environment()

# Without DJANGO_SECRET_KEY(_FILE) and with DEBUG off, every process of this installation
# (web, worker, any manage.py command) uses one key generated once into this file.
GENERATED_SECRET_KEY_FILE = VAR_DIR / "secret_key"

DEBUG = env.DJANGO_DEBUG
SECRET_KEY = env.DJANGO_SECRET_KEY or (
    DEVELOPMENT_SECRET_KEY if DEBUG else generated_secret_key(GENERATED_SECRET_KEY_FILE)
)
ALLOWED_HOSTS = list(env.DJANGO_ALLOWED_HOSTS)
CSRF_TRUSTED_ORIGINS = list(env.DJANGO_CSRF_TRUSTED_ORIGINS)
PORT = env.PORT
HOST = env.HOST
# --- The web server (config/web.py; README "Web server") ------------------------------------
# WEB_SERVER: granian (the default), or gunicorn with its stock gthread worker.
# WEB_CONCURRENCY: processes. WEB_THREADS: the threads of a process that run requests. Under
# granian they are started while requests wait and end after 30 s idle, and a request whose
# body is still arriving holds one (granian has no body timeout): 128 by default, room for a
# hundred slow clients. Under gunicorn they are started for good and a client holds one from
# its first byte to the end of its body: 4 by default, behind a buffering proxy.
# WEB_BACKPRESSURE: the connections a process serves at once (granian --backpressure, gunicorn
# --worker-connections); more wait in the listen backlog.
# WEB_HEADER_TIMEOUT_SECONDS: how long a client may take to send a request's headers, and an
# idle kept-alive connection stays open (granian --http1-header-read-timeout; gunicorn
# --keep-alive, the idle part only: gthread bounds no read).
WEB_SERVER = env.WEB_SERVER
WEB_CONCURRENCY = env.WEB_CONCURRENCY
WEB_THREADS = env.WEB_THREADS or (128 if WEB_SERVER == "granian" else 4)
WEB_BACKPRESSURE = env.WEB_BACKPRESSURE
WEB_HEADER_TIMEOUT_SECONDS = env.WEB_HEADER_TIMEOUT_SECONDS

# --- Telegram -------------------------------------------------------------------------------
TELEGRAM_BOT_TOKEN = env.TELEGRAM_BOT_TOKEN
TELEGRAM_WEBHOOK_SECRET = env.TELEGRAM_WEBHOOK_SECRET
TELEGRAM_API_BASE_URL = env.TELEGRAM_API_BASE_URL
OWNER_TELEGRAM_ID = env.OWNER_TELEGRAM_ID
ADMIN_TELEGRAM_IDS = list(env.ADMIN_TELEGRAM_IDS)
ALLOWED_CHAT_IDS = list(env.ALLOWED_CHAT_IDS)
# The bot leaves a group or channel outside ALLOWED_CHAT_IDS it is added to (community).
LEAVE_UNLISTED_CHATS = env.LEAVE_UNLISTED_CHATS
# Interactions (commands, button presses, private messages) per user and per chat and minute;
# expensive commands have their own, stricter budget. Admins are not limited.
RATE_LIMIT_USER_PER_MINUTE = env.RATE_LIMIT_USER_PER_MINUTE
RATE_LIMIT_CHAT_PER_MINUTE = env.RATE_LIMIT_CHAT_PER_MINUTE
RATE_LIMIT_EXPENSIVE_PER_MINUTE = env.RATE_LIMIT_EXPENSIVE_PER_MINUTE
# How long a worker may hold an update before another may take it over (Telegram itself
# re-sends after 60 s without an answer).
UPDATE_CLAIM_TTL_SECONDS = env.UPDATE_CLAIM_TTL_SECONDS
# A claim names its process; a process whose heartbeat key (live:<id>) is older than this is
# taken for dead and its claims may be taken over before their TTL
# (telegram_bot/pipeline/liveness.py).
UPDATE_LIVENESS_TTL_SECONDS = env.UPDATE_LIVENESS_TTL_SECONDS
UPDATE_DONE_TTL_HOURS = env.UPDATE_DONE_TTL_HOURS
# How the per-message KV keys are laid out (issue 45): "compact" packs done-markers and the
# raw-message buffer into groups (one Redis hash per 100 updates / 100 messages of a chat) and
# writes no unit marker beside a done-marker written in the same step; "legacy" is the 0.2
# layout (a key per marker and per buffer entry), kept as the bench's baseline. Both read both.
STATE_KEY_LAYOUT = env.STATE_KEY_LAYOUT
# Every KV key carries the bot's id after its family (session:<bot>:<chat>:<user>), so that
# several bots share one Redis or database without mixing their data. False keeps the format
# of the versions before (one bot per storage); an existing deployment that turns it on moves
# its keys with ``manage.py move_state_keys`` (docs/operations.md).
STATE_KEYS_BY_BOT = env.STATE_KEYS_BY_BOT
DEAD_LETTER_RETENTION_DAYS = env.DEAD_LETTER_RETENTION_DAYS
# Retention of personal data (docs/privacy.md), enforced by the daily privacy_retention schedule.
AUDIT_LOG_RETENTION_DAYS = env.AUDIT_LOG_RETENTION_DAYS
SUPPORT_CLOSED_TICKET_RETENTION_DAYS = env.SUPPORT_CLOSED_TICKET_RETENTION_DAYS
JOIN_REQUEST_RETENTION_DAYS = env.JOIN_REQUEST_RETENTION_DAYS
# Optional: a channel or group (its negative id) where every audit-log entry of every app is
# also posted (telegram_bot/audit.py); a chat may name its own log channel as well.
AUDIT_LOG_CHAT_ID = env.AUDIT_LOG_CHAT_ID
# Jobs (telegram_bot/jobs): retry policy and leases.
# delay = min(max, base * 2 ** (attempt - 1)) + random(0, jitter); a 429 waits at least its
# retry_after. max_retries counts the retries after the first attempt.
JOB_RETRY_BASE_DELAY = env.JOB_RETRY_BASE_DELAY
JOB_RETRY_MAX_DELAY = env.JOB_RETRY_MAX_DELAY
JOB_RETRY_JITTER = env.JOB_RETRY_JITTER
JOB_MAX_RETRIES = env.JOB_MAX_RETRIES
# A job must finish within its lease; a worker that dies leaves the job to be claimed again
# once the lease expires. At least 90 s: past the longest Telegram call (the client's send
# window, ~60 s) and a margin, or a job whose send is still out would be run a second time.
JOB_LEASE_SECONDS = env.JOB_LEASE_SECONDS
# The outgoing limiter: every message the bot sends is paced to Telegram's limits (overall,
# per private chat, per group or channel; bulk sends such as broadcasts get a share of the
# overall rate; an interactive send waits at most OUTGOING_MAX_WAIT_SECONDS, then is retried).
OUTGOING_LIMITS = env.OUTGOING_LIMITS
OUTGOING_PER_SECOND = env.OUTGOING_PER_SECOND
OUTGOING_PRIVATE_CHAT_PER_SECOND = env.OUTGOING_PRIVATE_CHAT_PER_SECOND
OUTGOING_GROUP_PER_MINUTE = env.OUTGOING_GROUP_PER_MINUTE
OUTGOING_BULK_SHARE_PERCENT = env.OUTGOING_BULK_SHARE_PERCENT
OUTGOING_MAX_WAIT_SECONDS = env.OUTGOING_MAX_WAIT_SECONDS
JOB_RETENTION_DAYS = env.JOB_RETENTION_DAYS
# Content: how long the panel's post conversation waits for the next step, and the retries of
# a publication (default JOB_MAX_RETRIES).
CONTENT_WORKFLOW_TTL_SECONDS = env.CONTENT_WORKFLOW_TTL_SECONDS
CONTENT_PUBLISH_MAX_RETRIES = env.CONTENT_PUBLISH_MAX_RETRIES
# Support: how long /support waits for the message, how long Reply waits for the answer, and
# how long after closing a user may reopen a ticket by replying.
SUPPORT_OPEN_TTL_SECONDS = env.SUPPORT_OPEN_TTL_SECONDS
SUPPORT_REPLY_TTL_SECONDS = env.SUPPORT_REPLY_TTL_SECONDS
SUPPORT_REOPEN_DAYS = env.SUPPORT_REOPEN_DAYS
SUPPORT_STAFF_CHAT_ID = env.SUPPORT_STAFF_CHAT_ID
SUPPORT_STAFF_NOTE_PREFIX = env.SUPPORT_STAFF_NOTE_PREFIX
SUPPORT_REMIND_AFTER_MINUTES = env.SUPPORT_REMIND_AFTER_MINUTES
# Statistics: the raw-message buffer and counter lifetimes (the backfill must run within the
# counters' lifetime), backfill lease and slice bounds, /stats.
STATS_BUFFER_TTL_DAYS = env.STATS_BUFFER_TTL_DAYS
STATS_COUNTER_TTL_DAYS = env.STATS_COUNTER_TTL_DAYS
STATS_BACKFILL_LEASE_SECONDS = env.STATS_BACKFILL_LEASE_SECONDS
# Slice bounds (stats/README.md, Backfill): keys, KV values read, rows written per slice. The
# rows of a table go in one statement; the bounds keep a slice's memory (a few MB) and its
# transaction, which holds the days' exclusive locks, short (tens of milliseconds). A slice must
# afford one finalize day (34 totals + its page) and one base key (+ day lock, state write).
STATS_BACKFILL_MAX_KEYS = env.STATS_BACKFILL_MAX_KEYS
STATS_BACKFILL_MAX_KV_READS = env.STATS_BACKFILL_MAX_KV_READS
STATS_BACKFILL_MAX_STATEMENTS = env.STATS_BACKFILL_MAX_STATEMENTS
# A message for a day that closes within this margin leaves a late marker (clock skew between
# web nodes and the worker); the reconciliation re-verifies at most this many days a minute.
STATS_LATE_MARGIN_SECONDS = env.STATS_LATE_MARGIN_SECONDS
STATS_RECONCILE_MAX_DAYS = env.STATS_RECONCILE_MAX_DAYS
# The live writer's database add, written per process and epoch of this many milliseconds
# (PostgreSQL with Redis; stats/write_behind.py); 0 writes each message's add before answering.
STATS_WRITE_BEHIND_MS = env.STATS_WRITE_BEHIND_MS
# Not from the environment (tests change them): how long a process keeps the counting rules
# it read, and the clock skew between nodes the backfill allows for.
STATS_CONFIG_CACHE_SECONDS = 5.0
STATS_BACKFILL_CLOCK_SKEW_MS = 5000
STATS_COMMAND_TOP = env.STATS_COMMAND_TOP
STATS_COMMAND_COOLDOWN_SECONDS = env.STATS_COMMAND_COOLDOWN_SECONDS
# The spam-list check on join (community/spamlist.py).
SPAMCHECK_URL = env.SPAMCHECK_URL
SPAMCHECK_TIMEOUT_MS = env.SPAMCHECK_TIMEOUT_MS
SPAMCHECK_CACHE_SECONDS = env.SPAMCHECK_CACHE_SECONDS
SPAMCHECK_FAIL_OPEN = env.SPAMCHECK_FAIL_OPEN
# The Mini App (webapp/): its public https address (empty: the buttons and the menu button are
# not offered), the age an initData or Login Widget answer may have, the session's length, and
# the logins a client address may try a minute.
MINIAPP_PUBLIC_URL = env.MINIAPP_PUBLIC_URL
MINIAPP_AUTH_MAX_AGE_SECONDS = env.MINIAPP_AUTH_MAX_AGE_SECONDS
MINIAPP_SESSION_SECONDS = env.MINIAPP_SESSION_SECONDS
MINIAPP_LOGINS_PER_MINUTE = env.MINIAPP_LOGINS_PER_MINUTE


# --- Database -------------------------------------------------------------------------------
def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES['default'] for a ``sqlite://`` or ``postgres://`` URL."""
    try:
        parsed = check_database_url(url)
    except ValueError as exc:
        raise ConfigError("DATABASE_URL", str(exc)) from None
    if parsed.scheme == "sqlite":
        # sqlite:////absolute/path, sqlite:///relative/path
        absolute = parsed.path.startswith("//")
        return sqlite_database(Path(parsed.path[1:]) if absolute else BASE_DIR / parsed.path[1:])
    # Decoded as libpq decodes a connection URI's parameters (options=-c%20statement_timeout...).
    options = dict(parse_qsl(parsed.query, keep_blank_values=True))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parsed.path.lstrip("/"),
        "USER": parsed.user,
        "PASSWORD": parsed.password,
        "HOST": parsed.host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def sqlite_database(path: Path) -> dict[str, object]:
    # WAL lets the web process read while the worker writes; IMMEDIATE transactions and a busy
    # timeout make writers queue instead of failing with "database is locked".
    private_file(path)
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(VAR_DIR / "test_db.sqlite3")},
    }


def private_file(path: Path) -> None:
    """Create ``path`` (and its directory) readable by this user only, 0600 in 0700, unless it
    exists: the database holds the conversations, and SQLite gives its -wal and -shm files the
    database file's mode. An existing file keeps the mode its operator gave it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


DATABASE_URL = env.DATABASE_URL
DATABASES = {
    "default": database_from_url(DATABASE_URL)
    if DATABASE_URL
    else sqlite_database(VAR_DIR / "db.sqlite3")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: KV state, cache and the django-q2 broker ----------------------------------------
REDIS_URL = env.REDIS_URL
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "cache",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# The KV state layer (telegram_bot.state): Redis when configured, else the database table.
KV_STORE_URL = REDIS_URL or "db://"
KV_PURGE_BATCH = env.KV_PURGE_BATCH

Q_CLUSTER = {
    "name": "tgcp",
    # Two cores: two workers leave room for the web process.
    "workers": env.Q_WORKERS,
    "timeout": 120,
    # retry must exceed timeout, or a slow task is handed to a second worker while it runs.
    "retry": 300,
    "max_attempts": 1,
    # Missed runs are not replayed after downtime; jobs catch up from their own state.
    "catch_up": False,
    "save_limit": 250,
    # django-q2 names its app after this label; lazy, so the admin index shows it translated.
    "label": gettext_lazy("Task queue"),
    "poll": 1,
}
# SIGTERM/SIGINT stops the worker within this many seconds: running tasks get that long, then
# the cluster's processes are killed (their jobs are claimed again after their lease). Below
# the 10 s that `docker stop` and systemd wait by default.
WORKER_STOP_SECONDS = env.WORKER_STOP_SECONDS
if REDIS_URL:
    Q_CLUSTER["django_redis"] = "default"
else:
    Q_CLUSTER["orm"] = "default"

# --- Django ---------------------------------------------------------------------------------
# The feature apps, label: module; FEATURES_DISABLED may name any of them. The chat rules
# are an app of their own inside the moderation package (they act through its services).
FEATURE_APPS = {
    "support": "support",
    "community": "community",
    "content": "content",
    "moderation": "moderation",
    "rules": "moderation.rules.apps.RulesConfig",
    "stats": "stats",
    "webapp": "webapp",
    "broadcasts": "broadcasts",
}
INSTALLED_APPS = [
    # django-unfold, the console's skin and sidebar: before the admin, whose templates it
    # overrides; its BasicAppConfig leaves the site to ours (telegram_bot/ops/admin_site.py).
    "unfold.apps.BasicAppConfig",
    "telegram_bot.ops.admin_site.OperatorsAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Features, from telegram_bot down: each app's AppConfig declares what it contributes
    # (telegram_bot/features.py), and their order here is the routing order. telegram_bot
    # comes before django_q: its qcluster command (with a bounded stop) replaces django-q2's.
    "telegram_bot",
    "django_q",
    "telegram_bot.ops.third_party.LoginAttemptsConfig",
    # For its bundled Swagger UI (template and static files): /api/v1/docs loads nothing from
    # a CDN.
    "ninja",
    *FEATURE_APPS.values(),
]
# FEATURES_DISABLED: feature apps that stay installed (their data, privacy hooks and queued
# jobs) with their handlers, schedules, admin pages, API routes and cards off
# (telegram_bot/features.py).
FEATURES_DISABLED = list(env.FEATURES_DISABLED)
for _label in FEATURES_DISABLED:
    if _label not in FEATURE_APPS:
        raise ConfigError(
            "FEATURES_DISABLED",
            f"no feature {_label!r}; the features are {', '.join(FEATURE_APPS)}",
        )

# Every request goes through all of it, the webhook's too. The four from
# telegram_bot.transport.middleware are Django's, wrapped to hand Telegram's deliveries, which
# use no session, user, messages or browser language, straight to the next one.
MIDDLEWARE = [
    "telegram_bot.log_context.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "telegram_bot.transport.middleware.SessionMiddleware",
    # The admin site follows the operator's browser (Accept-Language); after sessions, before
    # common, as Django asks.
    "telegram_bot.transport.middleware.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "telegram_bot.transport.middleware.AuthenticationMiddleware",
    "telegram_bot.transport.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it answers a locked-out login with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The languages of the bot's texts and of the admin site (catalogues in locale/). The bot
# answers in the user's Telegram language, else the chat's (ChatPreference), else this default.
LANGUAGES = list(SITE_LANGUAGES.items())
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_CODE = env.LANGUAGE_CODE
# The default time zone of a chat (its days and hours in the statistics); a chat may have its
# own (ChatPreference).
TIME_ZONE = env.TIME_ZONE
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where collectstatic writes and the web process serves from (whitenoise).
STATIC_ROOT = Path(env.STATIC_ROOT or VAR_DIR / "static").resolve()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
MEDIA_ROOT = VAR_DIR / "media"
# Uploads (post photos, at most 10 MB) are private files of this process.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
# Bodies: forms and JSON (the webhook takes up to 1 MiB) are held in memory up to 2 MiB; a file
# above 1 MiB streams to a temporary file, and config.uploads stops any file over
# UPLOAD_MAX_BYTES while it is read.
UPLOAD_MAX_BYTES = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = 10
FILE_UPLOAD_HANDLERS = [
    "config.uploads.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- HTTPS -----------------------------------------------------------------------------------
# Production runs behind a TLS-terminating proxy that sets X-Forwarded-Proto (and must strip it
# from what clients send). Behind it, secure cookies, the redirect to HTTPS and a year of HSTS
# are the defaults; each can be set on its own. check_production fails without them.
BEHIND_TLS_PROXY = env.DJANGO_BEHIND_TLS_PROXY
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env.secure_cookies
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Telegram's web client shows the Mini App (/app/) in a frame of web.telegram.org, where a Lax
# cookie is not sent and every form would fail its CSRF check. The CSRF cookie is no credential
# (a request must also carry the token from the page, which another site cannot read), so over
# https it goes to frames too; the admin's session cookie stays Lax.
CSRF_COOKIE_SAMESITE = "None" if CSRF_COOKIE_SECURE else "Lax"
SECURE_SSL_REDIRECT = env.ssl_redirect
# Probes and the Prometheus scrape come over the internal network in plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.hsts_seconds
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.hsts_include_subdomains
# Preloading is a promise to browsers that is slow to take back: only on request (and only
# with a year of HSTS covering subdomains: config/env.py refuses it otherwise).
SECURE_HSTS_PRELOAD = env.DJANGO_HSTS_PRELOAD
# check --deploy asks for preload and subdomains: preload is off unless asked for (above), and
# subdomains is silenced only when the operator turned it off explicitly.
SILENCED_SYSTEM_CHECKS = [
    *(["security.W021"] if not SECURE_HSTS_PRELOAD else []),
    *(["security.W005"] if env.DJANGO_HSTS_INCLUDE_SUBDOMAINS is False else []),
    # The admin site looks for Django's session, auth and messages middleware classes; MIDDLEWARE
    # has telegram_bot.transport.middleware's wrappers of them, which telegram_bot.E002 checks.
    "admin.E408",
    "admin.E409",
    "admin.E410",
]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Login throttling (django-axes) ------------------------------------------------------------
# Failed admin logins are counted in the database (shared by every web process); after
# LOGIN_FAILURE_LIMIT failures the login is refused with 429 for LOGIN_COOLOFF_MINUTES, even
# with the right password. By default the lock is per user name and client address, so an
# attacker cannot lock the owner out from elsewhere; LOGIN_LOCKOUT_BY=ip locks an address for
# every user name, username_or_ip locks either.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_LOCKOUT_PARAMETERS: dict[str, list[str | list[str]]] = {
    "username_and_ip": [["username", "ip_address"]],
    "ip": ["ip_address"],
    "username_or_ip": ["username", "ip_address"],
}
AXES_ENABLED = env.LOGIN_THROTTLING
AXES_FAILURE_LIMIT = env.LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=env.LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = LOGIN_LOCKOUT_PARAMETERS[env.LOGIN_LOCKOUT_BY]
AXES_RESET_ON_SUCCESS = True
# The client's address: behind the TLS proxy, the one the proxy appended to X-Forwarded-For
# (TRUSTED_PROXY_COUNT hops from the right); never the left-most entry, which the client
# chooses.
TRUSTED_PROXY_COUNT = env.trusted_proxy_count
AXES_CLIENT_IP_CALLABLE = "telegram_bot.login_throttle.client_ip"
# telegram_bot/admin.py registers the attempts and logs (the cleanup needs the delete permission).
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

# --- The operators' console (django-unfold) ----------------------------------------------------
# Its title, header and sidebar come from the site (telegram_bot/ops/admin_site.py) and the
# console's sections (telegram_bot/ops/navigation.py), as callables of the request: the sidebar
# lists only what the operator may open, grouped as they work.
UNFOLD = {
    "SITE_TITLE": "telegram_bot.ops.admin_site.site_title",
    "SITE_HEADER": "telegram_bot.ops.admin_site.site_header",
    "SITE_SYMBOL": "forum",
    "STYLES": ["telegram_bot.ops.admin_site.console_styles"],
    "SIDEBAR": {
        "show_search": True,
        "show_all_applications": False,
        "navigation": "telegram_bot.ops.navigation.sidebar",
    },
}
# Unfold's login form carries no "next": a login lands on the console's start page.
LOGIN_REDIRECT_URL = "admin:index"

LOG_LEVEL = env.LOG_LEVEL
# django-q2 logs every enqueued and finished task at INFO: a line or more a minute while idle.
Q_LOG_LEVEL = env.Q_LOG_LEVEL
# plain: "time LEVEL logger message"; json: one object per line with request_id and update_id.
LOG_FORMAT = env.LOG_FORMAT
# /metrics answers only to "Authorization: Bearer <METRICS_TOKEN>"; unset, it does not exist.
METRICS_TOKEN = env.METRICS_TOKEN
# /readyz and check_production: a worker counts as seen when it finished a task this recently.
WORKER_SEEN_WITHIN_SECONDS = env.WORKER_SEEN_WITHIN_SECONDS
# Where this deployment's backups are described (free text or a URL); check_production needs it.
BACKUP_POLICY = env.BACKUP_POLICY
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_tokens": {
            "()": "telegram_bot.redaction.TokenRedactingFilter",
            # Besides anything shaped like a token: the configured secrets themselves.
            "secrets": [TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, METRICS_TOKEN, SECRET_KEY],
        },
        "context": {"()": "telegram_bot.log_context.ContextFilter"},
        # Drops Django's "ERROR django.request" line of an expected 503 (a backend down, an
        # update another worker holds), which its own WARNING has already explained.
        "expected_failures": {"()": "telegram_bot.log_context.ExpectedFailureFilter"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        # One object per line: time, level, logger, message, request_id, update_id, process,
        # the traceback as exc, and any extra= fields (python-json-logger).
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": ["levelname", "name", "message", "request_id", "update_id", "process"],
            "rename_fields": {"levelname": "level", "name": "logger", "exc_info": "exc"},
            "timestamp": "time",
            "json_ensure_ascii": False,
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["redact_tokens", "context"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django-q": {"level": Q_LOG_LEVEL},
        "django.request": {"filters": ["expected_failures"]},
        # httpx logs every request URL, and Telegram URLs carry the token.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# --- Error reporting (optional) -------------------------------------------------------------
# SENTRY_DSN set: errors go to Sentry, scrubbed of secrets (telegram_bot/error_reporting.py).
SENTRY_DSN = env.SENTRY_DSN
if SENTRY_DSN:
    from config.version import VERSION
    from telegram_bot.error_reporting import init_sentry

    init_sentry(
        SENTRY_DSN,
        secrets=[TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, METRICS_TOKEN, SECRET_KEY],
        release=VERSION,
        environment=env.SENTRY_ENVIRONMENT,
    )
