"""Read and validate settings from the environment.

Every reader raises ``ConfigError`` naming the variable and what is wrong with it, so that a
broken deployment stops at start with one clear line instead of failing later at run time.
Secrets may also come from a file: ``NAME_FILE`` holds the path of a file whose content is the
value (Docker and systemd secrets). An empty value counts as unset, wherever it comes from (the
real environment, ``.env``, a ``_FILE``): ``NAME=`` copied from ``.env.example`` never overrides a
default or clashes with ``NAME_FILE``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import zoneinfo
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TOKEN_RE = re.compile(r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$")
WEBHOOK_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


class ConfigError(ImproperlyConfigured):
    """A setting is missing or malformed; ``str()`` is one line naming the variable."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")


class Env:
    """Typed access to an environment mapping (``os.environ`` unless given)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = os.environ if environ is None else environ

    def raw(self, name: str) -> str | None:
        """The value of ``name``, or of the file named by ``name_FILE``; None when unset or
        empty."""
        value = _non_empty(self.environ.get(name))
        file_name = _non_empty(self.environ.get(f"{name}_FILE"))
        if value is not None and file_name is not None:
            raise ConfigError(name, f"set both {name} and {name}_FILE; set only one")
        if file_name is not None:
            try:
                with open(file_name, encoding="utf-8") as handle:
                    return _non_empty(handle.read())
            except OSError as exc:
                raise ConfigError(
                    f"{name}_FILE", f"cannot read {file_name!r} ({exc.strerror})"
                ) from None
        return value

    def text(self, name: str, default: str = "") -> str:
        value = self.raw(name)
        return default if value is None or value == "" else value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        word = value.lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise ConfigError(name, f"must be true or false, got {value!r}")

    def number(
        self, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self.optional_number(name, minimum=minimum, maximum=maximum)
        return default if value is None else value

    def optional_number(
        self, name: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        value = self.raw(name)
        if value is None or value == "":
            return None
        number = parse_int(name, value)
        if minimum is not None and number < minimum:
            raise ConfigError(name, f"must be at least {minimum}, got {number}")
        if maximum is not None and number > maximum:
            raise ConfigError(name, f"must be at most {maximum}, got {number}")
        return number

    def seconds(self, name: str, default: float, *, minimum: float = 0.0) -> float:
        """A duration in seconds (a decimal number, at least ``minimum``)."""
        value = self.raw(name)
        if value is None or value == "":
            return default
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(name, f"must be a number of seconds, got {value!r}") from None
        if not number >= minimum or number == float("inf"):
            raise ConfigError(name, f"must be at least {minimum:g} seconds, got {value!r}")
        return number

    def int_list(self, name: str) -> list[int]:
        value = self.raw(name) or ""
        items = [item.strip() for item in value.split(",") if item.strip()]
        return [parse_int(name, item) for item in items]

    def str_list(self, name: str, default: list[str]) -> list[str]:
        value = self.raw(name)
        if value is None or value.strip() == "":
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    def bot_token(self, name: str) -> str:
        value = self.text(name)
        if value and not TOKEN_RE.match(value):
            # Never echo the value: it is a secret even when malformed.
            raise ConfigError(name, "must look like <digits>:<secret> as given by @BotFather")
        return value

    def webhook_secret(self, name: str) -> str:
        value = self.text(name)
        if value and not WEBHOOK_SECRET_RE.match(value):
            raise ConfigError(name, "must be 1-256 characters of A-Z a-z 0-9 _ -")
        return value

    def time_zone(self, name: str, default: str) -> str:
        """An IANA time zone name (``Europe/Moscow``), checked against the zone database."""
        value = self.text(name, default)
        if value not in zoneinfo.available_timezones():
            raise ConfigError(name, f"not a time zone name (e.g. Europe/Moscow): {value!r}")
        return value

    def url(self, name: str, default: str, schemes: tuple[str, ...]) -> str:
        value = self.text(name, default)
        parse_url(name, value, schemes)
        return value.rstrip("/") if schemes == ("http", "https") else value


def _non_empty(value: str | None) -> str | None:
    """``value`` stripped, or None when it is unset or blank."""
    if value is None:
        return None
    value = value.strip()
    return value or None


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


def parse_int(name: str, value: str) -> int:
    text = value.strip()
    if not re.fullmatch(r"[+-]?[0-9]{1,20}", text):
        raise ConfigError(name, f"must be an integer, got {value!r}")
    number = int(text)
    if not -(2**63) <= number < 2**63:  # what the database and Redis store
        raise ConfigError(name, f"is out of range (a 64-bit integer), got {value!r}")
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


def parse_url(name: str, value: str, schemes: tuple[str, ...]) -> ParsedUrl:
    """Parse ``value`` as a URL with one of ``schemes``; raise ConfigError if it does not parse."""
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
        raise ConfigError(name, problem) from None
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        expected = ", ".join(f"{s}://" for s in schemes)
        raise ConfigError(name, f"must start with one of {expected}")
    if scheme not in ("sqlite", "unix") and not parts.hostname:
        raise ConfigError(name, "is not a valid URL (no host)")
    return ParsedUrl(
        scheme=scheme,
        host=parts.hostname or "",
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        path=unquote(parts.path),
        query=parts.query,
    )
