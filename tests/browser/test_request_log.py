"""The browser fixture's request log, which a failed browser test's report prints: where the
page was, what never finished, what failed, and the console."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

import pytest
from pluggy import Result

from tests.browser import conftest
from tests.browser.conftest import RequestLog


@pytest.mark.django_db(transaction=True)
def test_the_log_names_requests_in_flight_and_failed(page: Any, live_server: Any) -> None:
    log = RequestLog(page)
    page.route("**/hangs", lambda route: None)  # never answered
    page.route("**/fails", lambda route: route.abort("connectionreset"))
    page.goto(f"{live_server.url}/healthz")
    with page.expect_console_message(lambda message: message.text == "gone"):
        page.evaluate("void fetch('/hangs'); fetch('/fails').catch(() => console.warn('gone'))")

    report = log.report()
    assert report.splitlines()[0] == f"page at {live_server.url}/healthz"
    assert f"never finished: GET {live_server.url}/hangs" in report
    assert f"failed: GET {live_server.url}/fails: net::ERR_CONNECTION_RESET" in report
    assert "console warning: gone" in report
    assert "healthz" not in report.split("\n", 1)[1]  # finished requests are not listed


class _Log:
    def report(self) -> str:
        return "page at http://testserver/"


def _sections(when: str, failed: bool, log: _Log | None = None) -> list[tuple[str, str]]:
    """The sections the report hook leaves on a report of phase ``when``."""
    item = SimpleNamespace(stash=pytest.Stash())
    if log is not None:
        item.stash[conftest._REQUEST_LOG] = log
    report = SimpleNamespace(when=when, failed=failed, sections=[])
    hook = conftest.pytest_runtest_makereport(item, None)  # type: ignore[arg-type]
    next(hook)
    with contextlib.suppress(StopIteration):
        hook.send(Result.from_call(lambda: report))
    return report.sections


def test_a_failed_tests_report_carries_the_log() -> None:
    assert _sections("call", failed=True, log=_Log()) == [
        ("browser at the failure", "page at http://testserver/")
    ]
    assert _sections("call", failed=False, log=_Log()) == []
    assert _sections("setup", failed=True, log=_Log()) == []  # no page to speak of yet
    assert _sections("call", failed=True) == []  # a test without a browser page
