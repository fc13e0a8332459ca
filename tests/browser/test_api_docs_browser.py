"""/api/v1/docs in a real Chromium: Swagger UI renders from this origin alone, under its
Content-Security-Policy, with every request outside the test server refused."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_render_offline(admin_page: Any, live_server: Any) -> None:
    outside: list[str] = []
    blocked: list[str] = []

    def only_this_origin(route: Any) -> None:
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    admin_page.route("**/*", only_this_origin)
    admin_page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    admin_page.goto(f"{live_server.url}/api/v1/docs")
    admin_page.wait_for_selector(".swagger-ui .info .title")
    assert "Community bot API" in admin_page.inner_text(".swagger-ui .info .title")
    admin_page.wait_for_selector(".opblock-tag")  # the operations, read from openapi.json
    assert "stats" in admin_page.inner_text(".swagger-ui")
    assert outside == []
    assert blocked == []
