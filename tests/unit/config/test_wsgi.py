"""The web worker's entry point leaves nothing for a full collection to walk but what the
requests add: Django and every view are imported, then frozen (``config/wsgi.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import gc, sys
before = gc.get_freeze_count()
import config.wsgi
print(before, gc.get_freeze_count(), "telegram_bot.transport.webhook" in sys.modules)
"""


def test_the_worker_imports_every_view_then_freezes_what_it_holds() -> None:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings_test"
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    before, frozen, webhook_imported = done.stdout.split()
    assert int(before) == 0
    assert int(frozen) > 50_000  # Django, the apps, the URLconf and its views
    assert webhook_imported == "True"
