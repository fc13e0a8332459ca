from __future__ import annotations

from django.test import Client


def test_the_api_docs_and_schema_are_for_staff_only(client: Client, admin_client: Client) -> None:
    assert client.get("/api/v1/openapi.json").status_code in (302, 401, 403)
    assert client.get("/api/v1/docs").status_code == 302
    schema = admin_client.get("/api/v1/openapi.json")
    assert schema.status_code == 200
    assert schema.json()["info"]["title"] == "Community bot API"
    assert admin_client.get("/api/v1/docs").status_code == 200
