from __future__ import annotations

import tomllib

import pytest
from django.db import OperationalError, connection
from django.test import Client

from config.version import PYPROJECT, VERSION
from telegram_bot.state import open_store, override_store


@pytest.fixture
def client() -> Client:
    return Client()


def test_healthz_answers_while_the_process_serves(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": VERSION}
    assert VERSION.split("+")[0] == tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_is_ok_when_database_and_kv_answer(client: Client) -> None:
    with override_store(open_store("db://")):
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "kv": "ok"}


@pytest.mark.django_db
def test_readyz_names_the_kv_store_when_it_is_down(client: Client) -> None:
    # Nothing listens on port 1: a real refused connection, not a mock.
    with override_store(open_store("redis://127.0.0.1:1/0")):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["kv"]


@pytest.mark.django_db
def test_readyz_names_the_database_when_it_is_down(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_cursor(*args: object, **kwargs: object) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", broken_cursor)
    with override_store(open_store("memory://")):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["database"]


def test_the_admin_login_page_is_served(client: Client, db: None) -> None:
    response = client.get("/admin/login/")
    assert response.status_code == 200
    assert b"Django administration" in response.content or b"Log in" in response.content


@pytest.mark.django_db
def test_the_admin_site_shows_the_version(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert f'<div id="product-version">Community bot {VERSION}</div>' in page
    assert "Community bot administration" in page  # the site header, above the sidebar
