"""Over https the CSRF cookie reaches the Mini App inside Telegram's web client (a frame of
web.telegram.org): SameSite=None; without https it stays Lax (None needs Secure). The admin's
session cookie stays Lax either way."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.config.test_https_settings import DOCUMENTED_PRODUCTION, SECRET
from tests.unit.config.test_settings import run_manage


def cookie_settings(env: dict[str, str], tmp_path: Path) -> dict[str, object]:
    code = (
        "import json; from django.conf import settings; print(json.dumps({n: getattr(settings, n)"
        " for n in ('CSRF_COOKIE_SAMESITE', 'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_SAMESITE')}))"
    )
    env = {**env, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}
    result = run_manage(env, "shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_the_csrf_cookie_reaches_telegrams_frame_over_https(tmp_path: Path) -> None:
    assert cookie_settings(DOCUMENTED_PRODUCTION, tmp_path) == {
        "CSRF_COOKIE_SAMESITE": "None",
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
    }
    plain = cookie_settings({"DJANGO_SECRET_KEY": SECRET, "DJANGO_DEBUG": "false"}, tmp_path)
    assert plain["CSRF_COOKIE_SAMESITE"] == "Lax" and plain["CSRF_COOKIE_SECURE"] is False
