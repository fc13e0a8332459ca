"""Settings for the test suite: the real settings with safe test values as defaults."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key-only-for-the-test-suite-0123456789")
os.environ.setdefault("TELEGRAM_BOT_TOKEN", "123456789:TEST-token-for-the-fake-bot-api-000000")
os.environ.setdefault("TELEGRAM_WEBHOOK_SECRET", "test-webhook-secret")
os.environ.setdefault("OWNER_TELEGRAM_ID", "1000")
os.environ.setdefault("LOG_LEVEL", "WARNING")
# Unpaced by default: most tests send several messages to one chat within a second. The
# limiter's own tests (tests/unit/telegram_core/test_outgoing_limiter.py, tests/broadcasts/)
# turn it on.
os.environ.setdefault("OUTGOING_LIMITS", "false")

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"] = {  # noqa: F405
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
}

if str(DATABASES["default"]["ENGINE"]).endswith("sqlite3"):  # noqa: F405
    # One test database file per test run, so two runs on one machine never share one.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_db_{os.getpid()}.sqlite3")}  # noqa: F405
