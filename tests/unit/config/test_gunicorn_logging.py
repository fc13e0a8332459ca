"""The access log leaves out what /metrics counts: passing probes and accepted deliveries."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from config.gunicorn_logging import QuietProbesLogger


@pytest.mark.parametrize(
    ("method", "path", "status", "logged"),
    [
        ("POST", "/telegram/webhook", 200, False),
        ("POST", "/telegram/webhook", 401, True),
        ("POST", "/telegram/webhook", 400, True),
        ("POST", "/telegram/webhook", 503, True),
        ("GET", "/telegram/webhook", 405, True),
        ("GET", "/healthz", 200, False),
        ("GET", "/readyz", 503, True),
        ("GET", "/admin/", 302, True),
        ("POST", "/api/v1/stats/report", 200, True),
    ],
)
def test_what_is_logged(
    monkeypatch: pytest.MonkeyPatch, method: str, path: str, status: int, logged: bool
) -> None:
    lines: list[str] = []

    def access(self: Logger, resp: Any, req: Any, environ: dict[str, Any], took: Any) -> None:
        lines.append(environ["PATH_INFO"])

    monkeypatch.setattr(Logger, "access", access)
    logger = QuietProbesLogger(Config())
    environ = {"PATH_INFO": path, "REQUEST_METHOD": method}
    logger.access(SimpleNamespace(status_code=status), None, environ, None)
    assert lines == ([path] if logged else [])
