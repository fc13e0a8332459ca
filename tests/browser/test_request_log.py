"""The browser fixture's request log, which a failed browser test's report prints: where the
page was, what never finished, what failed, and the console."""

from __future__ import annotations

from typing import Any

import pytest

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
