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


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def admin_page(page: Any, live_server: Any, django_user_model: Any) -> Any:
    """A page logged in to the admin site as a superuser."""
    django_user_model.objects.create_superuser("operator", "op@example.org", ADMIN_PASSWORD)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", ADMIN_PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    return page
