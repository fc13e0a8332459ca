"""Django settings, read from the environment and validated at import.

A bad value raises ``config.env.ConfigError``; ``manage.py`` and the WSGI entry point turn it
into one line on stderr and a non-zero exit. The variables are listed in ``.env.example``.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl

import redis
from django.utils.translation import gettext_lazy

from config.env import ConfigError, Env, generated_secret_key, parse_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
env = Env()

# A fixed key for local development only: refused whenever DEBUG is off.
DEVELOPMENT_SECRET_KEY = "dev-insecure-9f3c1e0b7a2d4c68b5e1f0a3d7c9e2b4-do-not-use-in-production"  # noqa: S105
# Without DJANGO_SECRET_KEY(_FILE) and with DEBUG off, every process of this installation
# (web, worker, any manage.py command) uses one key generated once into this file.
GENERATED_SECRET_KEY_FILE = VAR_DIR / "secret_key"

DEBUG = env.flag("DJANGO_DEBUG", default=False)
# Where processes do not share var/ (containers: compose sets it), a generated key would differ
# between them: the key must then come from the environment or a _FILE.
if env.flag("DJANGO_SECRET_KEY_REQUIRED", default=False) and not env.text("DJANGO_SECRET_KEY"):
    raise ConfigError(
        "DJANGO_SECRET_KEY",
        "must be set (or DJANGO_SECRET_KEY_FILE): this deployment's processes share no var/ "
        "to generate one into",
    )
SECRET_KEY = env.text("DJANGO_SECRET_KEY") or (
    DEVELOPMENT_SECRET_KEY if DEBUG else generated_secret_key(GENERATED_SECRET_KEY_FILE)
)
if not DEBUG and SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    raise ConfigError(
        "DJANGO_SECRET_KEY",
        "must be set when DJANGO_DEBUG is off (the development key is public)",
    )
if len(SECRET_KEY) < 32:
    raise ConfigError("DJANGO_SECRET_KEY", "must be at least 32 characters long")
ALLOWED_HOSTS = env.str_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.str_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    parse_url("DJANGO_CSRF_TRUSTED_ORIGINS", _origin, ("http", "https"))
PORT = env.number("PORT", 8000, minimum=1, maximum=65535)
HOST = env.text("HOST", "127.0.0.1")
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
WEB_SERVERS = ("gunicorn", "granian")
WEB_SERVER = env.text("WEB_SERVER", "granian").lower()
if WEB_SERVER not in WEB_SERVERS:
    raise ConfigError("WEB_SERVER", f"must be one of {', '.join(WEB_SERVERS)}, got {WEB_SERVER!r}")
WEB_CONCURRENCY = env.number("WEB_CONCURRENCY", 2, minimum=1, maximum=64)
WEB_THREADS = env.number(
    "WEB_THREADS", 128 if WEB_SERVER == "granian" else 4, minimum=1, maximum=1024
)
WEB_BACKPRESSURE = env.number("WEB_BACKPRESSURE", 512, minimum=8, maximum=65_535)
WEB_HEADER_TIMEOUT_SECONDS = env.number("WEB_HEADER_TIMEOUT_SECONDS", 10, minimum=1, maximum=60)

# --- Telegram -------------------------------------------------------------------------------
TELEGRAM_BOT_TOKEN = env.bot_token("TELEGRAM_BOT_TOKEN")
TELEGRAM_WEBHOOK_SECRET = env.webhook_secret("TELEGRAM_WEBHOOK_SECRET")
TELEGRAM_API_BASE_URL = env.url(
    "TELEGRAM_API_BASE_URL", "https://api.telegram.org", ("http", "https")
)
OWNER_TELEGRAM_ID = env.optional_number("OWNER_TELEGRAM_ID", minimum=1)
ADMIN_TELEGRAM_IDS = env.int_list("ADMIN_TELEGRAM_IDS")
ALLOWED_CHAT_IDS = env.int_list("ALLOWED_CHAT_IDS")
# The bot leaves a group or channel outside ALLOWED_CHAT_IDS it is added to (community).
LEAVE_UNLISTED_CHATS = env.flag("LEAVE_UNLISTED_CHATS", default=False)
if TELEGRAM_BOT_TOKEN and OWNER_TELEGRAM_ID is None:
    # Without an owner the bot would have no admin at all (admin lockout).
    raise ConfigError("OWNER_TELEGRAM_ID", "must be set when TELEGRAM_BOT_TOKEN is set")
# Interactions (commands, button presses, private messages) per user and per chat and minute;
# expensive commands have their own, stricter budget. Admins are not limited.
RATE_LIMIT_USER_PER_MINUTE = env.number(
    "RATE_LIMIT_USER_PER_MINUTE", 20, minimum=1, maximum=100_000
)
RATE_LIMIT_CHAT_PER_MINUTE = env.number(
    "RATE_LIMIT_CHAT_PER_MINUTE", 60, minimum=1, maximum=100_000
)
RATE_LIMIT_EXPENSIVE_PER_MINUTE = env.number(
    "RATE_LIMIT_EXPENSIVE_PER_MINUTE", 3, minimum=1, maximum=100_000
)
# How long a worker may hold an update before another may take it over (Telegram itself
# re-sends after 60 s without an answer).
UPDATE_CLAIM_TTL_SECONDS = env.number("UPDATE_CLAIM_TTL_SECONDS", 90, minimum=5, maximum=3600)
# A claim names its process; a process whose heartbeat key (live:<id>) is older than this is
# taken for dead and its claims may be taken over before their TTL
# (telegram_bot/pipeline/liveness.py).
UPDATE_LIVENESS_TTL_SECONDS = env.number("UPDATE_LIVENESS_TTL_SECONDS", 10, minimum=3, maximum=120)
UPDATE_DONE_TTL_HOURS = env.number("UPDATE_DONE_TTL_HOURS", 48, minimum=24, maximum=24 * 30)
DEAD_LETTER_RETENTION_DAYS = env.number("DEAD_LETTER_RETENTION_DAYS", 7, minimum=1, maximum=365)
# Retention of personal data (docs/privacy.md), enforced by the daily privacy_retention schedule.
AUDIT_LOG_RETENTION_DAYS = env.number("AUDIT_LOG_RETENTION_DAYS", 365, minimum=1, maximum=36500)
SUPPORT_CLOSED_TICKET_RETENTION_DAYS = env.number(
    "SUPPORT_CLOSED_TICKET_RETENTION_DAYS", 365, minimum=1, maximum=36500
)
JOIN_REQUEST_RETENTION_DAYS = env.number("JOIN_REQUEST_RETENTION_DAYS", 7, minimum=1, maximum=7)
# Optional: a channel or group (its negative id) where every audit-log entry of every app is
# also posted (telegram_bot/audit.py); a chat may name its own log channel as well.
AUDIT_LOG_CHAT_ID = env.optional_number("AUDIT_LOG_CHAT_ID", maximum=-1)
# Jobs (telegram_bot/jobs): retry policy and leases.
# delay = min(max, base * 2 ** (attempt - 1)) + random(0, jitter); a 429 waits at least its
# retry_after. max_retries counts the retries after the first attempt.
JOB_RETRY_BASE_DELAY = env.seconds("JOB_RETRY_BASE_DELAY", 2.0, minimum=0.01)
JOB_RETRY_MAX_DELAY = env.seconds("JOB_RETRY_MAX_DELAY", 300.0, minimum=0.01)
JOB_RETRY_JITTER = env.seconds("JOB_RETRY_JITTER", 1.0)
JOB_MAX_RETRIES = env.number("JOB_MAX_RETRIES", 5, minimum=0, maximum=100)
# A job must finish within its lease; a worker that dies leaves the job to be claimed again
# once the lease expires. At least 90 s: past the longest Telegram call (the client's send
# window, ~60 s) and a margin, or a job whose send is still out would be run a second time.
JOB_LEASE_SECONDS = env.number("JOB_LEASE_SECONDS", 120, minimum=90, maximum=24 * 3600)
JOB_RETENTION_DAYS = env.number("JOB_RETENTION_DAYS", 14, minimum=1, maximum=3650)
if JOB_RETRY_MAX_DELAY < JOB_RETRY_BASE_DELAY:
    raise ConfigError("JOB_RETRY_MAX_DELAY", "must be at least JOB_RETRY_BASE_DELAY")
# Content: how long the panel's post conversation waits for the next step, and the retries of
# a publication (default JOB_MAX_RETRIES).
CONTENT_WORKFLOW_TTL_SECONDS = env.number(
    "CONTENT_WORKFLOW_TTL_SECONDS", 1800, minimum=60, maximum=7 * 86400
)
CONTENT_PUBLISH_MAX_RETRIES = env.optional_number(
    "CONTENT_PUBLISH_MAX_RETRIES", minimum=0, maximum=100
)
# Support: how long /support waits for the message, how long Reply waits for the answer, and
# how long after closing a user may reopen a ticket by replying.
SUPPORT_OPEN_TTL_SECONDS = env.number(
    "SUPPORT_OPEN_TTL_SECONDS", 600, minimum=30, maximum=7 * 86400
)
SUPPORT_REPLY_TTL_SECONDS = env.number(
    "SUPPORT_REPLY_TTL_SECONDS", 900, minimum=30, maximum=7 * 86400
)
SUPPORT_REOPEN_DAYS = env.number("SUPPORT_REOPEN_DAYS", 7, minimum=0, maximum=365)
# Statistics: the raw-message buffer and counter lifetimes (the backfill must run within the
# counters' lifetime), backfill lease and slice bounds, /stats.
STATS_BUFFER_TTL_DAYS = env.number("STATS_BUFFER_TTL_DAYS", 7, minimum=1, maximum=60)
STATS_COUNTER_TTL_DAYS = env.number("STATS_COUNTER_TTL_DAYS", 60, minimum=2, maximum=3650)
STATS_BACKFILL_LEASE_SECONDS = env.number(
    "STATS_BACKFILL_LEASE_SECONDS", 600, minimum=30, maximum=86400
)
# Slice bounds (stats/README.md, Backfill): keys, KV values read, rows written per slice. The
# rows of a table go in one statement; the bounds keep a slice's memory (a few MB) and its
# transaction, which holds the days' exclusive locks, short (tens of milliseconds). A slice must
# afford one finalize day (34 totals + its page) and one base key (+ day lock, state write).
STATS_BACKFILL_MAX_KEYS = env.number("STATS_BACKFILL_MAX_KEYS", 5000, minimum=1, maximum=10_000)
STATS_BACKFILL_MAX_KV_READS = env.number(
    "STATS_BACKFILL_MAX_KV_READS", 12_000, minimum=35, maximum=100_000
)
STATS_BACKFILL_MAX_STATEMENTS = env.number(
    "STATS_BACKFILL_MAX_STATEMENTS", 12_000, minimum=6, maximum=100_000
)
# A message for a day that closes within this margin leaves a late marker (clock skew between
# web nodes and the worker); the reconciliation re-verifies at most this many days a minute.
STATS_LATE_MARGIN_SECONDS = env.number("STATS_LATE_MARGIN_SECONDS", 300, minimum=0, maximum=3600)
STATS_RECONCILE_MAX_DAYS = env.number("STATS_RECONCILE_MAX_DAYS", 20, minimum=1, maximum=1000)
# The live writer's database add, written per process and epoch of this many milliseconds
# (PostgreSQL with Redis; stats/write_behind.py); 0 writes each message's add before answering.
STATS_WRITE_BEHIND_MS = env.number("STATS_WRITE_BEHIND_MS", 50, minimum=0, maximum=1000)
# Not from the environment (tests change them): how long a process keeps the counting rules
# it read, and the clock skew between nodes the backfill allows for.
STATS_CONFIG_CACHE_SECONDS = 5.0
STATS_BACKFILL_CLOCK_SKEW_MS = 5000
STATS_COMMAND_TOP = env.number("STATS_COMMAND_TOP", 5, minimum=1, maximum=50)
STATS_COMMAND_COOLDOWN_SECONDS = env.number(
    "STATS_COMMAND_COOLDOWN_SECONDS", 30, minimum=0, maximum=86400
)
for _admin_id in ADMIN_TELEGRAM_IDS:
    if _admin_id <= 0:
        raise ConfigError("ADMIN_TELEGRAM_IDS", f"user ids are positive, got {_admin_id}")


# --- Database -------------------------------------------------------------------------------
def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES['default'] for a ``sqlite://`` or ``postgres://`` URL."""
    parsed = parse_url("DATABASE_URL", url, ("sqlite", "postgres", "postgresql"))
    if parsed.scheme == "sqlite":
        path = parsed.path
        if path.startswith("//"):  # sqlite:////abs/path
            path = path[1:]
        elif path.startswith("/"):  # sqlite:///relative/path
            path = str(BASE_DIR / path[1:])
        if not path or path == "/":
            raise ConfigError(
                "DATABASE_URL", "sqlite:// needs a file path, e.g. sqlite:///var/db.sqlite3"
            )
        return sqlite_database(Path(path))
    name = parsed.path.lstrip("/")
    if not name:
        raise ConfigError("DATABASE_URL", "needs a database name, e.g. postgres://host/dbname")
    # Decoded as libpq decodes a connection URI's parameters (options=-c%20statement_timeout...).
    options = dict(parse_qsl(parsed.query, keep_blank_values=True))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
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


def redis_url_check(url: str) -> None:
    """A REDIS_URL redis-py reads as written: its database a number (``/db1``, a typo for
    ``/1``, would quietly be database 0, perhaps another installation's) and its options
    of the right type (``socket_timeout=2s`` failed at the first update, not at start)."""
    parsed = parse_url("REDIS_URL", url, ("redis", "rediss", "unix"))
    database = parsed.path.strip("/")
    if parsed.scheme != "unix" and database and not database.isdigit():
        raise ConfigError("REDIS_URL", "the database after the port must be a number, e.g. /1")
    try:
        # A connection object built, never connected: redis-py hands an option it does not
        # know (?sockettimeout=2) to the connection class, which refuses it (a TypeError at
        # the first update otherwise, every update a 500).
        redis.ConnectionPool.from_url(url).make_connection()
    except ValueError as exc:  # redis-py's words name the option, never the URL
        raise ConfigError("REDIS_URL", str(exc)) from None
    except TypeError as exc:
        option = str(exc).rpartition(" ")[2].strip("'")
        raise ConfigError("REDIS_URL", f"redis-py knows no option {option!r}") from None


DATABASE_URL = env.text("DATABASE_URL")
DATABASES = {
    "default": database_from_url(DATABASE_URL)
    if DATABASE_URL
    else sqlite_database(VAR_DIR / "db.sqlite3")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: KV state, cache and the django-q2 broker ----------------------------------------
REDIS_URL = env.text("REDIS_URL")
if REDIS_URL:
    redis_url_check(REDIS_URL)
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
KV_PURGE_BATCH = env.number("KV_PURGE_BATCH", 5000, minimum=1, maximum=100_000)

Q_CLUSTER = {
    "name": "tgcp",
    # Two cores: two workers leave room for the web process.
    "workers": env.number("Q_WORKERS", 2, minimum=1, maximum=32),
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
WORKER_STOP_SECONDS = env.number("WORKER_STOP_SECONDS", 7, minimum=1, maximum=120)
if REDIS_URL:
    Q_CLUSTER["django_redis"] = "default"
else:
    Q_CLUSTER["orm"] = "default"

# --- Django ---------------------------------------------------------------------------------
INSTALLED_APPS = [
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
    "support",
    "community",
    "content",
    "moderation",
    "stats",
]

MIDDLEWARE = [
    "telegram_bot.log_context.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The admin site follows the operator's browser (Accept-Language); after sessions, before
    # common, as Django asks.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
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
LANGUAGES = [("en", "English"), ("ru", "Русский")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_CODE = env.text("LANGUAGE_CODE", "en")
if LANGUAGE_CODE not in {code for code, _name in LANGUAGES}:
    raise ConfigError(
        "LANGUAGE_CODE",
        f"must be one of {', '.join(code for code, _ in LANGUAGES)}, got {LANGUAGE_CODE!r}",
    )
# The default time zone of a chat (its days and hours in the statistics); a chat may have its
# own (ChatPreference).
TIME_ZONE = env.time_zone("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Where collectstatic writes and the web process serves from (whitenoise).
STATIC_ROOT = Path(env.text("STATIC_ROOT", str(VAR_DIR / "static"))).resolve()
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
BEHIND_TLS_PROXY = env.flag("DJANGO_BEHIND_TLS_PROXY", default=False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env.flag("DJANGO_SECURE_COOKIES", default=BEHIND_TLS_PROXY)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env.flag("DJANGO_SSL_REDIRECT", default=BEHIND_TLS_PROXY)
# Probes and the Prometheus scrape come over the internal network in plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.number(
    "DJANGO_HSTS_SECONDS", 31_536_000 if BEHIND_TLS_PROXY else 0, minimum=0, maximum=63_072_000
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.flag(
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=SECURE_HSTS_SECONDS > 0
)
# Preloading is a promise to browsers that is slow to take back: only on request.
SECURE_HSTS_PRELOAD = env.flag("DJANGO_HSTS_PRELOAD", default=False)
if SECURE_HSTS_PRELOAD and not (
    SECURE_HSTS_SECONDS >= 31_536_000 and SECURE_HSTS_INCLUDE_SUBDOMAINS
):
    raise ConfigError(
        "DJANGO_HSTS_PRELOAD",
        "needs DJANGO_HSTS_SECONDS of at least 31536000 and DJANGO_HSTS_INCLUDE_SUBDOMAINS",
    )
# check --deploy asks for preload and subdomains: preload is off unless asked for (above), and
# subdomains is silenced only when the operator turned it off explicitly.
SILENCED_SYSTEM_CHECKS = [
    *(["security.W021"] if not SECURE_HSTS_PRELOAD else []),
    *(
        ["security.W005"]
        if env.raw("DJANGO_HSTS_INCLUDE_SUBDOMAINS") is not None
        and not SECURE_HSTS_INCLUDE_SUBDOMAINS
        else []
    ),
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
LOGIN_LOCKOUT_CHOICES: dict[str, list[str | list[str]]] = {
    "username_and_ip": [["username", "ip_address"]],
    "ip": ["ip_address"],
    "username_or_ip": ["username", "ip_address"],
}
AXES_ENABLED = env.flag("LOGIN_THROTTLING", default=True)
AXES_FAILURE_LIMIT = env.number("LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=100)
AXES_COOLOFF_TIME = timedelta(
    minutes=env.number("LOGIN_COOLOFF_MINUTES", 15, minimum=1, maximum=7 * 24 * 60)
)
_lockout_by = env.text("LOGIN_LOCKOUT_BY", "username_and_ip")
if _lockout_by not in LOGIN_LOCKOUT_CHOICES:
    raise ConfigError("LOGIN_LOCKOUT_BY", f"must be one of {', '.join(LOGIN_LOCKOUT_CHOICES)}")
AXES_LOCKOUT_PARAMETERS = LOGIN_LOCKOUT_CHOICES[_lockout_by]
AXES_RESET_ON_SUCCESS = True
# The client's address: behind the TLS proxy, the one the proxy appended to X-Forwarded-For
# (TRUSTED_PROXY_COUNT hops from the right); never the left-most entry, which the client
# chooses.
TRUSTED_PROXY_COUNT = env.number(
    "DJANGO_TRUSTED_PROXY_COUNT", 1 if BEHIND_TLS_PROXY else 0, minimum=0, maximum=10
)
AXES_CLIENT_IP_CALLABLE = "telegram_bot.login_throttle.client_ip"
AXES_ENABLE_ADMIN = True
AXES_VERBOSE = False

_LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
LOG_LEVEL = env.text("LOG_LEVEL", "INFO").upper()
if LOG_LEVEL not in _LOG_LEVELS:
    raise ConfigError(
        "LOG_LEVEL", f"must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}"
    )
# django-q2 logs every enqueued and finished task at INFO: a line or more a minute while idle.
Q_LOG_LEVEL = env.text("Q_LOG_LEVEL", "WARNING").upper()
if Q_LOG_LEVEL not in _LOG_LEVELS:
    raise ConfigError(
        "Q_LOG_LEVEL", f"must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {Q_LOG_LEVEL!r}"
    )
# plain: "time LEVEL logger message"; json: one object per line with request_id and update_id.
LOG_FORMAT = env.text("LOG_FORMAT", "plain").lower()
if LOG_FORMAT not in {"plain", "json"}:
    raise ConfigError("LOG_FORMAT", f"must be plain or json, got {LOG_FORMAT!r}")
# /metrics answers only to "Authorization: Bearer <METRICS_TOKEN>"; unset, it does not exist.
METRICS_TOKEN = env.text("METRICS_TOKEN")
if METRICS_TOKEN and (len(METRICS_TOKEN) < 16 or any(c.isspace() for c in METRICS_TOKEN)):
    raise ConfigError("METRICS_TOKEN", "must be at least 16 characters without spaces")
# /readyz and check_production: a worker counts as seen when it finished a task this recently.
WORKER_SEEN_WITHIN_SECONDS = env.number(
    "WORKER_SEEN_WITHIN_SECONDS", 180, minimum=60, maximum=86400
)
# Where this deployment's backups are described (free text or a URL); check_production needs it.
BACKUP_POLICY = env.text("BACKUP_POLICY")
if len(BACKUP_POLICY) > 500:
    raise ConfigError("BACKUP_POLICY", "must be at most 500 characters (a sentence or a URL)")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_tokens": {
            "()": "telegram_bot.redaction.TokenRedactingFilter",
            # Besides anything shaped like a token: the configured secrets themselves.
            "secrets": [TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, METRICS_TOKEN],
        },
        "context": {"()": "telegram_bot.log_context.ContextFilter"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "telegram_bot.log_context.JsonFormatter"},
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
        # httpx logs every request URL, and Telegram URLs carry the token.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# --- Error reporting (optional) -------------------------------------------------------------
# SENTRY_DSN set: errors go to Sentry, scrubbed of secrets (telegram_bot/error_reporting.py).
SENTRY_DSN = env.text("SENTRY_DSN")
if SENTRY_DSN:
    parse_url("SENTRY_DSN", SENTRY_DSN, ("http", "https"))
    from config.version import VERSION
    from telegram_bot.error_reporting import init_sentry

    init_sentry(
        SENTRY_DSN,
        secrets=[TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, METRICS_TOKEN, SECRET_KEY],
        release=VERSION,
        environment=env.text("SENTRY_ENVIRONMENT", "production"),
    )
