from __future__ import annotations

import re

from django.test import Client


def test_the_api_docs_and_schema_are_for_staff_only(client: Client, admin_client: Client) -> None:
    assert client.get("/api/v1/openapi.json").status_code in (302, 401, 403)
    assert client.get("/api/v1/docs").status_code == 302
    schema = admin_client.get("/api/v1/openapi.json")
    assert schema.status_code == 200
    assert schema.json()["info"]["title"] == "Community bot API"
    assert admin_client.get("/api/v1/docs").status_code == 200


def test_the_docs_page_loads_the_bundled_swagger_ui_from_this_origin(
    admin_client: Client,
) -> None:
    from django.contrib.staticfiles import finders

    response = admin_client.get("/api/v1/docs")
    page = response.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/static/ninja/swagger-ui-bundle.js" in sources
    assert "/static/ninja/swagger-ui.css" in sources
    assert all(source.startswith("/") and not source.startswith("//") for source in sources)
    assert "cdn" not in page.lower()
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    for asset in ("swagger-ui-bundle.js", "swagger-ui-init.js", "swagger-ui.css"):
        assert finders.find(f"ninja/{asset}") is not None  # collectstatic ships it
