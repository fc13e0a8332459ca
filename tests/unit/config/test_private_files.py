"""What the product writes under var/ is private to its user: the SQLite database (and the
-wal/-shm files SQLite gives the same mode) 0600 in a 0700 directory, uploads 0600 in 0700,
whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from tests.unit.config.test_settings import ROOT


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_database_is_private_under_a_loose_umask(tmp_path: Path) -> None:
    database = tmp_path / "fresh" / "db.sqlite3"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "TELEGRAM_", "OWNER_")) and key != "REDIS_URL"
    }
    env.update({"DJANGO_SECRET_KEY": "x" * 50, "DATABASE_URL": f"sqlite:///{database}"})
    result = subprocess.run(
        [sys.executable, "-c", _KEEP_OPEN_AFTER_MIGRATE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert result.returncode == 0, result.stderr
    assert mode(database.parent) == 0o700
    assert mode(database) == 0o600
    # Listed by the child while its connection was open (WAL files exist then).
    modes = dict(line.split() for line in result.stdout.split("\n") if line.strip())
    assert modes[database.name + "-wal"] == "0o600"
    assert modes[database.name + "-shm"] == "0o600"


_KEEP_OPEN_AFTER_MIGRATE = """
import os, stat, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.core.management import call_command
from django.db import connection
from django.conf import settings
call_command("migrate", "--noinput", verbosity=0)
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM django_migrations")
folder = os.path.dirname(settings.DATABASES["default"]["NAME"])
for name in sorted(os.listdir(folder)):
    print(name, oct(stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode)))
"""


def test_an_existing_database_file_keeps_its_mode(tmp_path: Path) -> None:
    from config.settings import private_file

    existing = tmp_path / "db.sqlite3"
    existing.write_bytes(b"")
    existing.chmod(0o640)
    private_file(existing)
    assert mode(existing) == 0o640


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_uploads_are_stored_private(tmp_path: Path, settings: Any, umask: int) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    previous = os.umask(umask)
    try:
        name = default_storage.save("content/photos/2026/12/a.png", ContentFile(b"\x89PNG"))
    finally:
        os.umask(previous)
    assert mode(tmp_path / "media" / name) == 0o600
    assert mode(tmp_path / "media" / "content" / "photos") == 0o700
