"""Every setting the environment gives, read and validated at start by pydantic-settings.

``read_environment()`` returns one ``Environment``: a field per variable, named as the variable,
typed, with its range. A bad value raises ``ConfigError`` naming the variable and what is wrong
with it, so that a broken deployment stops at start with one clear line instead of failing later
at run time (the entry points print it and exit with code 2: ``config/startup.py``).

- Secrets may also come from a file: ``NAME_FILE`` holds the path of a file whose content is the
  value (Docker and systemd secrets); setting both is refused.
- An empty or blank value counts as unset, wherever it comes from (the real environment,
  ``.env``, a ``_FILE``): ``NAME=`` copied from ``.env.example`` never overrides a default or
  clashes with ``NAME_FILE``. Values are stripped.
- ``.env`` (or ``ENV_FILE``) is copied into the environment first by ``load_env_file`` (the
  real environment wins), so libraries that read the environment themselves see it too.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import zoneinfo
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit

import redis
from django.core.exceptions import ImproperlyConfigured
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticUseDefault
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

TOKEN_RE = re.compile(r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$")
WEBHOOK_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# check_production refuses a shorter webhook secret (a guessable one lets anyone post updates);
# the start accepts one, so an existing deployment still starts and is told by the gate.
WEBHOOK_SECRET_MIN_PRODUCTION = 32
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The languages of the bot's texts and of the admin site (catalogues in locale/).
SITE_LANGUAGES = {"en": "English", "ru": "Русский"}
LOGIN_LOCKOUT_CHOICES = ("username_and_ip", "ip", "username_or_ip")
# A fixed key for local development only: refused whenever DEBUG is off.
DEVELOPMENT_SECRET_KEY = "dev-insecure-9f3c1e0b7a2d4c68b5e1f0a3d7c9e2b4-do-not-use-in-production"  # noqa: S105
DAY = 86400
T = TypeVar("T")


class ConfigError(ImproperlyConfigured):
    """A setting is missing or malformed; ``str()`` is one line naming the variable."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")


# --- value types: each validator gets the raw text (stripped; blank means the default) -----
def _text_or_default(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
        if not value:
            raise PydanticUseDefault
    return value


def _integer(value: Any) -> Any:
    value = _text_or_default(value)
    return parse_int(value) if isinstance(value, str) else value


def _flag(value: Any) -> Any:
    value = _text_or_default(value)
    if not isinstance(value, str):
        return value
    word = value.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"must be true or false, got {value!r}")


def _seconds(minimum: float) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        value = _text_or_default(value)
        if not isinstance(value, str):
            return value
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"must be a number of seconds, got {value!r}") from None
        if not number >= minimum or number == float("inf"):
            raise ValueError(f"must be at least {minimum:g} seconds, got {value!r}")
        return number

    return check


def _items(value: Any) -> Any:
    value = _text_or_default(value)
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


def _integers(value: Any) -> Any:
    items = _items(value)
    return tuple(parse_int(item) for item in items) if isinstance(value, str) else items


def _choice(choices: tuple[str, ...], case: Callable[[str], str]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        value = _text_or_default(value)
        word = case(value)
        if word not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {word!r}")
        return word

    return check


def _url(schemes: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        parse_url(value, schemes)
        return value.rstrip("/") if schemes == ("http", "https") else value

    return check


def _https_url(value: str) -> str:
    """An https address without query or fragment (Telegram opens Mini Apps over https only);
    empty: unset."""
    if not value:
        return value
    parsed = parse_url(value, ("https",))
    if parsed.query or "#" in value:
        raise ValueError("must be an https address without a query or fragment")
    return value.rstrip("/")


Text = Annotated[str, BeforeValidator(_text_or_default)]
Int = Annotated[int, BeforeValidator(_integer)]
OptionalInt = Annotated[int | None, BeforeValidator(_integer)]
Flag = Annotated[bool, BeforeValidator(_flag)]
OptionalFlag = Annotated[bool | None, BeforeValidator(_flag)]
Ints = Annotated[tuple[int, ...], NoDecode, BeforeValidator(_integers)]
Words = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_items)]
Seconds = Annotated[float, BeforeValidator(_seconds(0.0))]
PositiveSeconds = Annotated[float, BeforeValidator(_seconds(0.01))]
HttpUrl = Annotated[str, BeforeValidator(_text_or_default), AfterValidator(_url(("http", "https")))]
WebServer = Annotated[str, BeforeValidator(_choice(("gunicorn", "granian"), str.lower))]
SiteLanguage = Annotated[str, BeforeValidator(_choice(tuple(SITE_LANGUAGES), str.lower))]
LockoutBy = Annotated[str, BeforeValidator(_choice(LOGIN_LOCKOUT_CHOICES, str.lower))]
LogLevel = Annotated[str, BeforeValidator(_choice(LOG_LEVELS, str.upper))]
LogFormat = Annotated[str, BeforeValidator(_choice(("plain", "json"), str.lower))]


# --- single-value checks -------------------------------------------------------------------
def _bot_token(value: str) -> str:
    if not TOKEN_RE.match(value):
        # Never echo the value: it is a secret even when malformed.
        raise ValueError("must look like <digits>:<secret> as given by @BotFather")
    return value


def _webhook_secret(value: str) -> str:
    if not WEBHOOK_SECRET_RE.match(value):
        raise ValueError(
            "must be 1-256 characters of A-Z a-z 0-9 _ - (production needs at least "
            f"{WEBHOOK_SECRET_MIN_PRODUCTION})"
        )
    return value


def _secret_key(value: str) -> str:
    if len(value) < 32:
        raise ValueError("must be at least 32 characters long")
    return value


def _time_zone(value: str) -> str:
    """An IANA time zone name (``Europe/Moscow``), checked against the zone database."""
    if value not in zoneinfo.available_timezones():
        raise ValueError(f"not a time zone name (e.g. Europe/Moscow): {value!r}")
    return value


def _user_ids(values: tuple[int, ...]) -> tuple[int, ...]:
    for value in values:
        if value <= 0:
            raise ValueError(f"user ids are positive, got {value}")
    return values


def _origins(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        parse_url(value, ("http", "https"))
    return values


def _note_prefix(value: str) -> str:
    if len(value) > 8 or any(char.isspace() for char in value) or value.startswith("/"):
        raise ValueError("1 to 8 characters, no spaces, not starting with /")
    return value


def _metrics_token(value: str) -> str:
    if len(value) < 16 or any(c.isspace() for c in value):
        raise ValueError("must be at least 16 characters without spaces")
    return value


def _backup_policy(value: str) -> str:
    if len(value) > 500:
        raise ValueError("must be at most 500 characters (a sentence or a URL)")
    return value


def _database_url(url: str) -> str:
    check_database_url(url)
    return url


def _redis_url(url: str) -> str:
    redis_url_check(url)
    return url


def _features(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(value.lower() for value in values)


class Environment(BaseSettings):
    """The variables the product reads (``.env.example`` explains each), in the order in which
    a bad one is reported. ``None``: unset, where the default depends on another setting."""

    model_config = SettingsConfigDict(
        case_sensitive=True,
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
        # The defaults are ours; validating them would read "" as unset again.
        validate_default=False,
    )

    # --- Django and the processes
    DJANGO_DEBUG: Flag = False
    DJANGO_SECRET_KEY_REQUIRED: Flag = False
    DJANGO_SECRET_KEY: Annotated[Text, AfterValidator(_secret_key)] = ""
    DJANGO_ALLOWED_HOSTS: Words = ("localhost", "127.0.0.1", "[::1]")
    DJANGO_CSRF_TRUSTED_ORIGINS: Annotated[Words, AfterValidator(_origins)] = ()
    PORT: Annotated[Int, Field(ge=1, le=65535)] = 8000
    HOST: Text = "127.0.0.1"
    WEB_CONCURRENCY: Annotated[Int, Field(ge=1, le=64)] = 2
    # None: 128 under granian (started while requests wait), 4 under gunicorn (settings.py)
    WEB_THREADS: Annotated[OptionalInt, Field(ge=1, le=1024)] = None
    WEB_SERVER: WebServer = "granian"
    WEB_BACKPRESSURE: Annotated[Int, Field(ge=8, le=65_535)] = 512
    WEB_HEADER_TIMEOUT_SECONDS: Annotated[Int, Field(ge=1, le=60)] = 10
    # --- Telegram
    TELEGRAM_BOT_TOKEN: Annotated[Text, AfterValidator(_bot_token)] = ""
    TELEGRAM_WEBHOOK_SECRET: Annotated[Text, AfterValidator(_webhook_secret)] = ""
    TELEGRAM_API_BASE_URL: HttpUrl = "https://api.telegram.org"
    OWNER_TELEGRAM_ID: Annotated[OptionalInt, Field(ge=1)] = None
    ADMIN_TELEGRAM_IDS: Annotated[Ints, AfterValidator(_user_ids)] = ()
    ALLOWED_CHAT_IDS: Ints = ()
    LEAVE_UNLISTED_CHATS: Flag = False
    RATE_LIMIT_USER_PER_MINUTE: Annotated[Int, Field(ge=1, le=100_000)] = 20
    RATE_LIMIT_CHAT_PER_MINUTE: Annotated[Int, Field(ge=1, le=100_000)] = 60
    RATE_LIMIT_EXPENSIVE_PER_MINUTE: Annotated[Int, Field(ge=1, le=100_000)] = 3
    # The outgoing limiter (telegram_bot/client/limiter.py): Telegram's flood limits.
    OUTGOING_LIMITS: Flag = True
    OUTGOING_PER_SECOND: Annotated[Int, Field(ge=1, le=1000)] = 30
    OUTGOING_PRIVATE_CHAT_PER_SECOND: Annotated[Int, Field(ge=1, le=100)] = 1
    OUTGOING_GROUP_PER_MINUTE: Annotated[Int, Field(ge=1, le=6000)] = 20
    OUTGOING_BULK_SHARE_PERCENT: Annotated[Int, Field(ge=1, le=100)] = 80
    OUTGOING_MAX_WAIT_SECONDS: Annotated[Int, Field(ge=0, le=300)] = 10
    UPDATE_CLAIM_TTL_SECONDS: Annotated[Int, Field(ge=5, le=3600)] = 90
    UPDATE_LIVENESS_TTL_SECONDS: Annotated[Int, Field(ge=3, le=120)] = 10
    UPDATE_DONE_TTL_HOURS: Annotated[Int, Field(ge=24, le=24 * 30)] = 48
    STATE_KEY_LAYOUT: Literal["compact", "legacy"] = "compact"
    STATE_KEYS_BY_BOT: Flag = True
    DEAD_LETTER_RETENTION_DAYS: Annotated[Int, Field(ge=1, le=365)] = 7
    AUDIT_LOG_RETENTION_DAYS: Annotated[Int, Field(ge=1, le=36500)] = 365
    SUPPORT_CLOSED_TICKET_RETENTION_DAYS: Annotated[Int, Field(ge=1, le=36500)] = 365
    JOIN_REQUEST_RETENTION_DAYS: Annotated[Int, Field(ge=1, le=7)] = 7
    AUDIT_LOG_CHAT_ID: Annotated[OptionalInt, Field(le=-1)] = None
    # --- jobs
    JOB_RETRY_BASE_DELAY: PositiveSeconds = 2.0
    JOB_RETRY_MAX_DELAY: PositiveSeconds = 300.0
    JOB_RETRY_JITTER: Seconds = 1.0
    JOB_MAX_RETRIES: Annotated[Int, Field(ge=0, le=100)] = 5
    JOB_LEASE_SECONDS: Annotated[Int, Field(ge=90, le=DAY)] = 120
    JOB_RETENTION_DAYS: Annotated[Int, Field(ge=1, le=3650)] = 14
    # --- features
    CONTENT_WORKFLOW_TTL_SECONDS: Annotated[Int, Field(ge=60, le=7 * DAY)] = 1800
    CONTENT_PUBLISH_MAX_RETRIES: Annotated[OptionalInt, Field(ge=0, le=100)] = None
    SUPPORT_OPEN_TTL_SECONDS: Annotated[Int, Field(ge=30, le=7 * DAY)] = 600
    SUPPORT_REPLY_TTL_SECONDS: Annotated[Int, Field(ge=30, le=7 * DAY)] = 900
    SUPPORT_REOPEN_DAYS: Annotated[Int, Field(ge=0, le=365)] = 7
    # The staff forum supergroup (a -100... id): a topic per ticket; unset: private chats.
    SUPPORT_STAFF_CHAT_ID: Annotated[OptionalInt, Field(le=-1_000_000_000_001)] = None
    SUPPORT_STAFF_NOTE_PREFIX: Annotated[Text, AfterValidator(_note_prefix)] = "!"
    SUPPORT_REMIND_AFTER_MINUTES: Annotated[Int, Field(ge=1, le=7 * 24 * 60)] = 60
    STATS_BUFFER_TTL_DAYS: Annotated[Int, Field(ge=1, le=60)] = 7
    STATS_COUNTER_TTL_DAYS: Annotated[Int, Field(ge=2, le=3650)] = 60
    STATS_BACKFILL_LEASE_SECONDS: Annotated[Int, Field(ge=30, le=DAY)] = 600
    STATS_BACKFILL_MAX_KEYS: Annotated[Int, Field(ge=1, le=10_000)] = 5000
    STATS_BACKFILL_MAX_KV_READS: Annotated[Int, Field(ge=35, le=100_000)] = 12_000
    STATS_BACKFILL_MAX_STATEMENTS: Annotated[Int, Field(ge=6, le=100_000)] = 12_000
    STATS_LATE_MARGIN_SECONDS: Annotated[Int, Field(ge=0, le=3600)] = 300
    STATS_RECONCILE_MAX_DAYS: Annotated[Int, Field(ge=1, le=1000)] = 20
    STATS_WRITE_BEHIND_MS: Annotated[Int, Field(ge=0, le=1000)] = 50
    STATS_COMMAND_TOP: Annotated[Int, Field(ge=1, le=50)] = 5
    STATS_COMMAND_COOLDOWN_SECONDS: Annotated[Int, Field(ge=0, le=DAY)] = 30
    # A spam-check service asked about each new member (CAS's shape: GET URL?user_id=N).
    SPAMCHECK_URL: HttpUrl = ""
    SPAMCHECK_TIMEOUT_MS: Annotated[Int, Field(ge=50, le=10_000)] = 800
    SPAMCHECK_CACHE_SECONDS: Annotated[Int, Field(ge=0, le=7 * DAY)] = 3600
    SPAMCHECK_FAIL_OPEN: Flag = True
    # --- The Mini App (webapp/): its public https address (BotFather's URL, the buttons'), how
    # old a Mini App's initData or a Login Widget answer may be, how long its session lasts.
    MINIAPP_PUBLIC_URL: Annotated[Text, AfterValidator(_https_url)] = ""
    MINIAPP_AUTH_MAX_AGE_SECONDS: Annotated[Int, Field(ge=30, le=DAY)] = 3600
    MINIAPP_SESSION_SECONDS: Annotated[Int, Field(ge=300, le=7 * DAY)] = 8 * 3600
    MINIAPP_LOGINS_PER_MINUTE: Annotated[Int, Field(ge=1, le=1000)] = 20
    # App labels (comma-separated) whose handlers, schedules, admin pages, API routes and
    # overview cards are off (telegram_bot/features.py); checked against the feature apps by
    # config/settings.py.
    FEATURES_DISABLED: Annotated[Words, AfterValidator(_features)] = ()
    # --- storage
    DATABASE_URL: Annotated[Text, AfterValidator(_database_url)] = ""
    REDIS_URL: Annotated[Text, AfterValidator(_redis_url)] = ""
    KV_PURGE_BATCH: Annotated[Int, Field(ge=1, le=100_000)] = 5000
    Q_WORKERS: Annotated[Int, Field(ge=1, le=32)] = 2
    WORKER_STOP_SECONDS: Annotated[Int, Field(ge=1, le=120)] = 7
    LANGUAGE_CODE: SiteLanguage = "en"
    TIME_ZONE: Annotated[Text, AfterValidator(_time_zone)] = "UTC"
    STATIC_ROOT: Annotated[str | None, BeforeValidator(_text_or_default)] = None
    # --- HTTPS (None: follows DJANGO_BEHIND_TLS_PROXY)
    DJANGO_BEHIND_TLS_PROXY: Flag = False
    DJANGO_SECURE_COOKIES: OptionalFlag = None
    DJANGO_SSL_REDIRECT: OptionalFlag = None
    DJANGO_HSTS_SECONDS: Annotated[OptionalInt, Field(ge=0, le=63_072_000)] = None
    DJANGO_HSTS_INCLUDE_SUBDOMAINS: OptionalFlag = None
    DJANGO_HSTS_PRELOAD: Flag = False
    # --- login throttling
    LOGIN_THROTTLING: Flag = True
    LOGIN_FAILURE_LIMIT: Annotated[Int, Field(ge=1, le=100)] = 5
    LOGIN_COOLOFF_MINUTES: Annotated[Int, Field(ge=1, le=7 * 24 * 60)] = 15
    LOGIN_LOCKOUT_BY: LockoutBy = "username_and_ip"
    DJANGO_TRUSTED_PROXY_COUNT: Annotated[OptionalInt, Field(ge=0, le=10)] = None
    # --- logs, monitoring
    LOG_LEVEL: LogLevel = "INFO"
    Q_LOG_LEVEL: LogLevel = "WARNING"
    LOG_FORMAT: LogFormat = "plain"
    METRICS_TOKEN: Annotated[Text, AfterValidator(_metrics_token)] = ""
    WORKER_SEEN_WITHIN_SECONDS: Annotated[Int, Field(ge=60, le=DAY)] = 180
    BACKUP_POLICY: Annotated[Text, AfterValidator(_backup_policy)] = ""
    SENTRY_DSN: HttpUrl = ""
    SENTRY_ENVIRONMENT: Text = "production"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # .env is already in the environment (load_env_file), with its precedence rules.
        return (init_settings, env_settings, FileVariantSource(settings_cls))

    @model_validator(mode="after")
    def _rules_across_settings(self) -> Environment:
        # Where processes do not share var/ (containers: compose sets it), a generated key
        # would differ between them: the key must then come from the environment or a _FILE.
        if self.DJANGO_SECRET_KEY_REQUIRED and not self.DJANGO_SECRET_KEY:
            raise ConfigError(
                "DJANGO_SECRET_KEY",
                "must be set (or DJANGO_SECRET_KEY_FILE): this deployment's processes share no "
                "var/ to generate one into",
            )
        if not self.DJANGO_DEBUG and self.DJANGO_SECRET_KEY == DEVELOPMENT_SECRET_KEY:
            raise ConfigError(
                "DJANGO_SECRET_KEY",
                "must be set when DJANGO_DEBUG is off (the development key is public)",
            )
        if self.TELEGRAM_BOT_TOKEN and self.OWNER_TELEGRAM_ID is None:
            # Without an owner the bot would have no admin at all (admin lockout).
            raise ConfigError("OWNER_TELEGRAM_ID", "must be set when TELEGRAM_BOT_TOKEN is set")
        staff = self.SUPPORT_STAFF_CHAT_ID
        if staff is not None and self.ALLOWED_CHAT_IDS and staff not in self.ALLOWED_CHAT_IDS:
            raise ConfigError(
                "SUPPORT_STAFF_CHAT_ID", "must be one of ALLOWED_CHAT_IDS (the bot ignores others)"
            )
        if self.JOB_RETRY_MAX_DELAY < self.JOB_RETRY_BASE_DELAY:
            raise ConfigError("JOB_RETRY_MAX_DELAY", "must be at least JOB_RETRY_BASE_DELAY")
        if self.DJANGO_HSTS_PRELOAD and not (
            self.hsts_seconds >= 31_536_000 and self.hsts_include_subdomains
        ):
            raise ConfigError(
                "DJANGO_HSTS_PRELOAD",
                "needs DJANGO_HSTS_SECONDS of at least 31536000 and DJANGO_HSTS_INCLUDE_SUBDOMAINS",
            )
        return self

    # --- defaults that follow another setting
    @property
    def secure_cookies(self) -> bool:
        return _either(self.DJANGO_SECURE_COOKIES, self.DJANGO_BEHIND_TLS_PROXY)

    @property
    def ssl_redirect(self) -> bool:
        return _either(self.DJANGO_SSL_REDIRECT, self.DJANGO_BEHIND_TLS_PROXY)

    @property
    def hsts_seconds(self) -> int:
        default = 31_536_000 if self.DJANGO_BEHIND_TLS_PROXY else 0
        return _either(self.DJANGO_HSTS_SECONDS, default)

    @property
    def hsts_include_subdomains(self) -> bool:
        return _either(self.DJANGO_HSTS_INCLUDE_SUBDOMAINS, self.hsts_seconds > 0)

    @property
    def trusted_proxy_count(self) -> int:
        return _either(self.DJANGO_TRUSTED_PROXY_COUNT, 1 if self.DJANGO_BEHIND_TLS_PROXY else 0)


def _either(value: T | None, default: T) -> T:
    return default if value is None else value


def read_environment() -> Environment:
    """The validated settings of ``os.environ``; ``ConfigError`` for the first bad one."""
    try:
        return Environment()
    except ValidationError as exc:
        raise _config_error(exc.errors(include_url=False)[0]) from None


def _config_error(error: ErrorDetails) -> ConfigError:
    name = str(error["loc"][0]) if error["loc"] else "configuration"
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind == "value_error":
        problem = str(ctx["error"])
    elif kind == "greater_than_equal":
        problem = f"must be at least {ctx['ge']}, got {error['input']}"
    elif kind == "less_than_equal":
        problem = f"must be at most {ctx['le']}, got {error['input']}"
    else:  # pydantic's own words, which never quote the value
        problem = error["msg"]
    return ConfigError(name, problem)


class FileVariantSource(PydanticBaseSettingsSource):
    """``NAME_FILE``: the value of ``NAME`` is the content of the file it names. Setting both
    is refused; an empty file, like an empty variable, means unset."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return file_variant(os.environ, field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        values = {}
        for name, field in self.settings_cls.model_fields.items():
            value, key, _complex = self.get_field_value(field, name)
            if value is not None:
                values[key] = value
        return values


def file_variant(environ: Mapping[str, str], name: str) -> str | None:
    """The content of the file ``name_FILE`` names (stripped; None when unset or empty)."""
    file_name = _non_empty(environ.get(f"{name}_FILE"))
    if file_name is None:
        return None
    if _non_empty(environ.get(name)) is not None:
        raise ConfigError(name, f"set both {name} and {name}_FILE; set only one")
    try:
        with open(file_name, encoding="utf-8") as handle:
            return _non_empty(handle.read())
    except OSError as exc:
        raise ConfigError(f"{name}_FILE", f"cannot read {file_name!r} ({exc.strerror})") from None


def _non_empty(value: str | None) -> str | None:
    """``value`` stripped, or None when it is unset or blank."""
    if value is None:
        return None
    value = value.strip()
    return value or None


# --- .env ------------------------------------------------------------------------------------
def load_env_file(default_path: Path, environ: MutableMapping[str, str] | None = None) -> None:
    """Copy the variables of a ``.env`` file into ``environ`` (``os.environ``).

    The file is ``ENV_FILE`` when that is set (it must then exist; ``/dev/null`` reads none),
    else ``default_path`` if it exists. The real environment wins: a variable already set to a
    non-empty value, or whose ``_FILE`` twin is (or for ``NAME_FILE``, whose ``NAME`` is), is
    left alone; an empty value in either place counts as unset. Values are taken literally (no
    ``${VAR}`` expansion), so a secret holding ``$`` survives.
    """
    environ = os.environ if environ is None else environ
    named = _non_empty(environ.get("ENV_FILE"))
    path = Path(named) if named else default_path
    if named == os.devnull:
        return
    if not path.exists():
        if named:
            raise ConfigError("ENV_FILE", f"no such file: {named!r}")
        return
    from dotenv import dotenv_values  # only when there is a file to read

    try:
        values = dotenv_values(path, interpolate=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("ENV_FILE", f"cannot read {str(path)!r} ({exc})") from None
    for name, value in values.items():
        value = _non_empty(value)
        if value is None or _is_set(environ, name):
            continue
        twin = name[: -len("_FILE")] if name.endswith("_FILE") else f"{name}_FILE"
        if _is_set(environ, twin):
            continue
        environ[name] = value


def _is_set(environ: Mapping[str, str], name: str) -> bool:
    return _non_empty(environ.get(name)) is not None


# --- the generated secret key ------------------------------------------------------------------
def generated_secret_key(path: Path) -> str:
    """The key in ``path``, created once (mode 0600) when missing.

    Every process of one installation (``make run``'s web and worker, any ``manage.py`` command
    run by hand) reads the same file, so sessions and signed values stay valid between them.
    Creation is atomic: two processes starting at once agree on one key (a complete file is
    linked into place; the loser of the race reads the winner's).
    """
    existing = _read_key(path)
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
        with contextlib.suppress(FileExistsError):  # another process won: use its key
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    key = _read_key(path)
    if not key:
        raise ConfigError("DJANGO_SECRET_KEY", f"{str(path)!r} is empty; delete it or set a key")
    return key


def _read_key(path: Path) -> str | None:
    try:
        return _non_empty(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        problem = f"cannot read {str(path)!r} ({exc.strerror})"
        raise ConfigError("DJANGO_SECRET_KEY", problem) from None


# --- parsing -----------------------------------------------------------------------------------
def parse_int(value: str) -> int:
    """A decimal integer within 64 bits (what the database and Redis store); ``ValueError``
    with the problem otherwise."""
    text = value.strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,20}", text):
        raise ValueError(f"must be an integer, got {value!r}")
    number = int(text)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"is out of range (a 64-bit integer), got {value!r}")
    return number


@dataclass(frozen=True)
class ParsedUrl:
    scheme: str
    host: str
    port: int | None
    user: str
    password: str
    path: str
    query: str


def parse_url(value: str, schemes: tuple[str, ...]) -> ParsedUrl:
    """Parse ``value`` as a URL with one of ``schemes``; ``ValueError`` if it does not parse."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        # Never urlsplit's words: they quote the part after the first ":" of the netloc, a
        # password holding "/", "#" or "?" cut off there.
        problem = (
            "is not a valid URL (the port is not a number; in a password, write / # ? @ : %"
            " as %2F %23 %3F %40 %3A %25)"
        )
        raise ValueError(problem) from None
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        expected = ", ".join(f"{s}://" for s in schemes)
        raise ValueError(f"must start with one of {expected}")
    if scheme not in ("sqlite", "unix") and not parts.hostname:
        raise ValueError("is not a valid URL (no host)")
    return ParsedUrl(
        scheme=scheme,
        host=parts.hostname or "",
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        path=unquote(parts.path),
        query=parts.query,
    )


DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql")


def check_database_url(url: str) -> ParsedUrl:
    """A ``sqlite://`` URL with a file path or a ``postgres://`` URL with a database name."""
    parsed = parse_url(url, DATABASE_SCHEMES)
    if parsed.scheme == "sqlite":
        if parsed.path in ("", "/", "//"):  # sqlite:///relative, sqlite:////absolute
            raise ValueError("sqlite:// needs a file path, e.g. sqlite:///var/db.sqlite3")
    elif not parsed.path.lstrip("/"):
        raise ValueError("needs a database name, e.g. postgres://host/dbname")
    return parsed


def redis_url_check(url: str) -> None:
    """A REDIS_URL redis-py reads as written: its database a number (``/db1``, a typo for
    ``/1``, would quietly be database 0, perhaps another installation's) and its options
    of the right type (``socket_timeout=2s`` failed at the first update, not at start)."""
    parsed = parse_url(url, ("redis", "rediss", "unix"))
    database = parsed.path.strip("/")
    if parsed.scheme != "unix" and database and not database.isdigit():
        raise ValueError("the database after the port must be a number, e.g. /1")
    try:
        # redis-py's own parser; a connection object built, never connected: redis-py hands an
        # option it does not know (?sockettimeout=2) to the connection class, which refuses it
        # (a TypeError at the first update otherwise, every update a 500).
        redis.ConnectionPool.from_url(url).make_connection()
    except ValueError as exc:  # redis-py's words name the option, never the URL
        raise ValueError(str(exc)) from None
    except TypeError as exc:
        option = str(exc).rpartition(" ")[2].strip("'")
        raise ValueError(f"redis-py knows no option {option!r}") from None
