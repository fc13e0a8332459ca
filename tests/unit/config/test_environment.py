""".env files, empty values, the generated secret key and ``make superuser`` without a terminal.

The issue behind these: sourcing ``.env.example`` made ``make run`` exit 2 (an empty
``DJANGO_SECRET_KEY=`` clashed with the generated key file), ``.env`` was never read, and
``manage.py`` run by hand after ``make run`` failed on the secret key.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import ConfigError, generated_secret_key, load_env_file
from tests.unit.config.test_settings import read

ROOT = Path(__file__).resolve().parents[3]
PRINT_SETTINGS = (
    "from django.conf import settings as s; import hashlib; "
    "print(s.TELEGRAM_WEBHOOK_SECRET, s.PORT, s.OWNER_TELEGRAM_ID, "
    "hashlib.sha256(s.SECRET_KEY.encode()).hexdigest())"
)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- load_env_file ---------------------------------------------------------------------------
def test_env_file_values_fill_in_what_the_environment_lacks(tmp_path: Path) -> None:
    dotenv = write(
        tmp_path / ".env",
        "# comment\nPORT=9000\nTELEGRAM_WEBHOOK_SECRET='from-file'\nEMPTY=\nQUOTED=\"a b\"\n",
    )
    environ = {"PORT": "8001"}
    load_env_file(dotenv, environ)
    assert environ == {"PORT": "8001", "TELEGRAM_WEBHOOK_SECRET": "from-file", "QUOTED": "a b"}


def test_an_empty_real_variable_counts_as_unset(tmp_path: Path) -> None:
    dotenv = write(tmp_path / ".env", "PORT=9000\n")
    environ = {"PORT": "  "}
    load_env_file(dotenv, environ)
    assert environ["PORT"] == "9000"


def test_the_real_environment_wins_over_the_file_twin(tmp_path: Path) -> None:
    dotenv = write(tmp_path / ".env", "DJANGO_SECRET_KEY=k-from-file\nREDIS_URL_FILE=/x\n")
    environ = {"DJANGO_SECRET_KEY_FILE": "/run/secrets/key", "REDIS_URL": "redis://r/1"}
    load_env_file(dotenv, environ)
    # Neither NAME nor NAME_FILE from .env: the operator's own choice stays the only one.
    assert environ == {"DJANGO_SECRET_KEY_FILE": "/run/secrets/key", "REDIS_URL": "redis://r/1"}


def test_values_are_literal(tmp_path: Path) -> None:
    dotenv = write(tmp_path / ".env", "A=x$HOME${HOME}y\n")
    environ: dict[str, str] = {"HOME": "/root"}
    load_env_file(dotenv, environ)
    assert environ["A"] == "x$HOME${HOME}y"


def test_env_file_names_another_file_and_must_exist(tmp_path: Path) -> None:
    other = write(tmp_path / "prod.env", "PORT=7000\n")
    environ = {"ENV_FILE": str(other)}
    load_env_file(tmp_path / "absent", environ)
    assert environ["PORT"] == "7000"
    with pytest.raises(ConfigError, match="ENV_FILE: no such file"):
        load_env_file(tmp_path / "absent", {"ENV_FILE": str(tmp_path / "missing.env")})
    nothing: dict[str, str] = {"ENV_FILE": os.devnull}
    load_env_file(other, nothing)
    assert nothing == {"ENV_FILE": os.devnull}


def test_no_default_file_is_fine(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    load_env_file(tmp_path / ".env", environ)
    assert environ == {}


# --- empty means unset in Env ----------------------------------------------------------------
def test_empty_values_are_unset_for_every_reader(tmp_path: Path) -> None:
    key = write(tmp_path / "key", "k" * 50)
    env = read(
        {
            "DJANGO_SECRET_KEY": "",
            "DJANGO_SECRET_KEY_FILE": str(key),
            "PORT": " ",
            "LOGIN_THROTTLING": "",
            "OWNER_TELEGRAM_ID": "  ",
            "DJANGO_ALLOWED_HOSTS": " ",
            "JOB_RETRY_JITTER": "\t",
        }
    )
    assert env.DJANGO_SECRET_KEY == "k" * 50  # no "set both" clash with the empty one
    assert env.PORT == 8000
    assert env.LOGIN_THROTTLING is True
    assert env.OWNER_TELEGRAM_ID is None
    assert env.DJANGO_ALLOWED_HOSTS == ("localhost", "127.0.0.1", "[::1]")
    assert env.JOB_RETRY_JITTER == 1.0
    assert read({"HOST": "h", "HOST_FILE": ""}).HOST == "h"
    assert read({"HOST_FILE": str(write(tmp_path / "blank", "\n"))}).HOST == "127.0.0.1"


# --- the generated secret key ----------------------------------------------------------------
def test_generated_key_is_private_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secret_key"
    first = generated_secret_key(path)
    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert generated_secret_key(path) == first
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def _generate(path: str, queue: multiprocessing.Queue[str]) -> None:
    queue.put(generated_secret_key(Path(path)))


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[str] = context.Queue()
    processes = [context.Process(target=_generate, args=(str(path), queue)) for _ in range(6)]
    for process in processes:
        process.start()
    keys = {queue.get(timeout=60) for _ in processes}
    for process in processes:
        process.join(timeout=60)
    assert keys == {path.read_text().strip()}


# --- real processes --------------------------------------------------------------------------
def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "TELEGRAM_", "OWNER_", "ADMIN_", "ALLOWED_", "ENV_FILE"))
        and k not in ("DATABASE_URL", "REDIS_URL", "PORT")
    }
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_sourcing_env_example_runs(tmp_path: Path) -> None:
    """Every line of .env.example exported as it stands, empty values included."""
    env = clean_env(ENV_FILE=os.devnull, SQL=f"sqlite:///{tmp_path}/db.sqlite3")
    script = (
        'set -a; . ./.env.example; set +a; DATABASE_URL="$SQL"; '
        f'exec "{sys.executable}" manage.py check'
    )
    result = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_an_empty_metrics_directory_is_unset_for_prometheus_client_too() -> None:
    code = "from prometheus_client import values; print(values.ValueClass.__name__)"
    result = manage(
        clean_env(ENV_FILE=os.devnull, PROMETHEUS_MULTIPROC_DIR=""), "shell", "-v", "0", "-c", code
    )
    assert result.stdout.strip() == "MutexValue", result.stderr  # one process, no files in "."


def test_env_file_is_read_by_manage_py_and_the_real_environment_wins(tmp_path: Path) -> None:
    dotenv = write(
        tmp_path / ".env",
        "TELEGRAM_WEBHOOK_SECRET=from_file\nPORT=9001\nOWNER_TELEGRAM_ID=\n"
        f"DJANGO_SECRET_KEY={'f' * 50}\nDATABASE_URL=sqlite:///{tmp_path}/db.sqlite3\n",
    )
    result = manage(
        clean_env(ENV_FILE=str(dotenv), PORT="9002", OWNER_TELEGRAM_ID="77"),
        "shell",
        "-v",
        "0",
        "-c",
        PRINT_SETTINGS,
    )
    assert result.returncode == 0, result.stderr
    secret, port, owner, key_hash = result.stdout.split()
    assert (secret, port, owner) == ("from_file", "9002", "77")
    assert key_hash == hashlib.sha256(b"f" * 50).hexdigest()


def test_a_missing_env_file_is_one_line(tmp_path: Path) -> None:
    result = manage(clean_env(ENV_FILE=str(tmp_path / "nope.env")), "check")
    assert result.returncode == 2
    expected = f"configuration error: ENV_FILE: no such file: '{tmp_path}/nope.env'"
    assert result.stderr.strip() == expected


def test_every_process_sees_the_same_generated_key(tmp_path: Path) -> None:
    """What `make run` and a `manage.py` run by hand afterwards both do: no key configured."""
    env = clean_env(
        ENV_FILE=os.devnull,
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
    )
    runs = [manage(env, "shell", "-v", "0", "-c", PRINT_SETTINGS) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    hashes = {run.stdout.split()[-1] for run in runs}
    on_disk = (ROOT / "var" / "secret_key").read_text().strip()
    assert hashes == {hashlib.sha256(on_disk.encode()).hexdigest()}


def test_where_a_key_is_required_none_is_generated_and_a_file_is_taken(tmp_path: Path) -> None:
    """compose.yaml's containers share no var/: each generated its own key (sessions and the
    erasure's HMAC names differed between web and worker) unless one was set; a key from a
    file (DJANGO_SECRET_KEY_FILE, a mounted secret) must do as well as the variable."""
    env = clean_env(
        ENV_FILE=os.devnull,
        DJANGO_SECRET_KEY="",
        DJANGO_SECRET_KEY_REQUIRED="1",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
    )
    refused = manage(env, "check")
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("configuration error: DJANGO_SECRET_KEY: must be set")
    key = tmp_path / "key"
    key.write_text("k" * 50)
    taken = manage(
        {**env, "DJANGO_SECRET_KEY_FILE": str(key)}, "shell", "-v", "0", "-c", PRINT_SETTINGS
    )
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.split()[-1] == hashlib.sha256(b"k" * 50).hexdigest()


def test_compose_asks_for_the_key_from_env_or_a_file_not_the_variable_only() -> None:
    compose = (ROOT / "compose.yaml").read_text()
    assert 'DJANGO_SECRET_KEY_REQUIRED: "1"' in compose
    assert "${DJANGO_SECRET_KEY" not in compose  # that made a _FILE impossible


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_superuser_without_a_terminal(tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    env = clean_env(
        ENV_FILE=os.devnull,
        DJANGO_SECRET_KEY="s" * 50,
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        DJANGO_SUPERUSER_USERNAME="operator",
        DJANGO_SUPERUSER_EMAIL="ops@example.org",
        DJANGO_SUPERUSER_PASSWORD="a-long-operator-password-42",
    )
    result = subprocess.run(
        ["make", "-s", "-o", f"{venv}/.runtime", "superuser", f"VENV={venv}"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    check = manage(
        env,
        "shell",
        "-v",
        "0",
        "-c",
        # The model's check, not authenticate(): django-axes' backend needs a request.
        "from django.contrib.auth import get_user_model as m; "
        "u = m().objects.get(username='operator'); "
        "assert u.check_password('a-long-operator-password-42'); "
        "print(u.is_superuser, u.email)",
    )
    assert check.stdout.split() == ["True", "ops@example.org"], check.stderr


def test_time_zone_is_an_iana_name_and_defaults_to_utc() -> None:
    assert read({}).TIME_ZONE == "UTC"
    assert read({"TIME_ZONE": "Europe/Moscow"}).TIME_ZONE == "Europe/Moscow"
    for bad in ("Mars/Olympus", "+03:00", "europe/moscow"):
        with pytest.raises(ConfigError, match="TIME_ZONE: not a time zone name"):
            read({"TIME_ZONE": bad})


def test_static_files_are_collected_where_static_root_says(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.STATIC_ROOT)"
    env = clean_env(ENV_FILE=os.devnull, STATIC_ROOT=str(tmp_path / "static"))
    result = manage(env, "shell", "-v", "0", "-c", code)
    assert result.stdout.strip() == str(tmp_path / "static"), result.stderr
    unset = manage(clean_env(ENV_FILE=os.devnull), "shell", "-v", "0", "-c", code)
    assert unset.stdout.strip() == str(ROOT / "var" / "static"), unset.stderr
