"""Headless Chromium (the system's, driven by Playwright) against the live test server.

Playwright's own browser downloads are not used: the system Chromium is launched by path.
Without Chromium installed these tests are skipped and the skip is reported; CI installs it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# there are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN_PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("browser tests: chromium not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# Playwright's own default. CI runs these beside another xdist worker's process-killing and
# stress tests on two cores; 10 s once timed out a form's redirect there (load event unseen).
TIMEOUT_MS = 30_000
_REQUEST_LOG = pytest.StashKey["RequestLog"]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed browser test's report says where the page was and which of its requests
    never finished or failed (a timeout alone says neither)."""
    outcome = yield
    report = outcome.get_result()
    log = item.stash.get(_REQUEST_LOG, None)
    if report.when == "call" and report.failed and log is not None:
        report.sections.append(("browser at the failure", log.report()))


class RequestLog:
    """A page's requests still in flight, those that failed, and its console."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pending: dict[Any, str] = {}
        self.failed: list[str] = []
        self.console: list[str] = []
        page.on("request", lambda r: self.pending.__setitem__(r, f"{r.method} {r.url}"))
        page.on("requestfinished", lambda r: self.pending.pop(r, None))
        page.on("requestfailed", self._failed)
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))

    def _failed(self, request: Any) -> None:
        line = self.pending.pop(request, f"{request.method} {request.url}")
        self.failed.append(f"{line}: {request.failure}")

    def report(self) -> str:
        lines = [f"page at {self.page.url}"]
        lines += [f"on the page: {text}" for text in self._notices()]
        lines += [f"never finished: {line}" for line in self.pending.values()]
        lines += [f"failed: {line}" for line in self.failed]
        lines += [f"console {line}" for line in self.console[-20:]]
        return "\n".join(lines)

    def _notices(self) -> list[str]:
        """The admin's error notes, field errors and messages shown (a form sent back with an
        error stays at its own URL, as a click that sent nothing does)."""
        try:
            found = self.page.locator(".errornote, .errorlist, .messagelist").all_inner_texts()
        except Exception as exc:  # a closed page: the report still shows the rest
            return [f"(not readable: {type(exc).__name__})"]
        return [" ".join(text.split()) for text in found if text.strip()]


@pytest.fixture
def page(chromium: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    request.node.stash[_REQUEST_LOG] = RequestLog(page)
    yield page
    context.close()


@pytest.fixture
def admin_page(page: Any, live_server: Any, django_user_model: Any) -> Any:
    """A page logged in to the admin site as a superuser."""
    django_user_model.objects.create_superuser("operator", "op@example.org", ADMIN_PASSWORD)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", ADMIN_PASSWORD)
    page.click("#login-form [type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    return page
