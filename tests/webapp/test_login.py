"""Logging in to the Mini App: a session of its own (never a staff session), replay-safe,
CSRF-protected and rate limited."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import CREATOR, GROUP, describe_groups, init_data, login, widget_fields
from webapp.sessions import COOKIE

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(bot: FakeTelegramServer, settings: Any) -> str:
    describe_groups(bot)
    return str(settings.TELEGRAM_BOT_TOKEN)


def test_valid_initdata_opens_a_mini_app_session_and_no_staff_session(
    client: Client, token: str
) -> None:
    response = login(client, token, CREATOR, start_param=str(GROUP))
    assert response.status_code == 200
    assert response.json() == {"next": f"/app/c/{GROUP}/"}
    cookie = response.cookies[COOKIE]
    assert cookie["httponly"] and cookie["path"] == "/app/"
    assert "sessionid" not in response.cookies
    assert not Session.objects.exists()
    assert client.get("/app/").status_code == 200
    assert "Test group" in client.get("/app/").content.decode()
    # The Mini App session opens nothing of the staff site.
    assert client.get("/admin/").status_code == 302
    assert client.get("/api/v1/stats/chats").status_code in (401, 403, 404)


def test_a_replayed_initdata_opens_no_second_session(client: Client, token: str) -> None:
    data = init_data(token, CREATOR)
    assert client.post("/app/login/", {"init_data": data}).status_code == 200
    again = Client().post("/app/login/", {"init_data": data})
    assert again.status_code == 403 and COOKIE not in again.cookies


@pytest.mark.parametrize(
    "make",
    [
        lambda token: init_data(token, CREATOR).replace("hash=", "hash=0"),
        lambda token: init_data(token, CREATOR).replace("Ann", "Bob"),
        lambda token: init_data(token, CREATOR, auth_date=int(time.time()) - 7200),
        lambda token: init_data("987654321:AAE-another-bots-token-0123456789abcd", CREATOR),
    ],
    ids=["forged", "altered", "expired", "other-bot"],
)
def test_bad_initdata_is_refused(client: Client, token: str, make: Any) -> None:
    response = client.post("/app/login/", {"init_data": make(token)})
    assert response.status_code == 403
    assert COOKIE not in response.cookies
    assert client.get(f"/app/c/{GROUP}/").status_code == 404


def test_the_login_widget_opens_a_session_and_a_forged_one_does_not(
    client: Client, token: str
) -> None:
    forged = dict(widget_fields(token, CREATOR), hash="a" * 64)
    assert client.post("/app/login/widget/", forged).status_code == 403
    response = client.post("/app/login/widget/", widget_fields(token, CREATOR))
    assert response.status_code == 200 and COOKIE in response.cookies


def test_login_needs_the_csrf_token(token: str) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/app/login/", {"init_data": init_data(token, CREATOR)})
    assert response.status_code == 403
    page = client.get("/app/")
    csrf = page.cookies["csrftoken"].value
    response = client.post(
        "/app/login/", {"init_data": init_data(token, CREATOR)}, HTTP_X_CSRFTOKEN=csrf
    )
    assert response.status_code == 200


def test_changes_need_the_csrf_token(token: str) -> None:
    client = Client(enforce_csrf_checks=True)
    csrf = client.get("/app/").cookies["csrftoken"].value
    client.post("/app/login/", {"init_data": init_data(token, CREATOR)}, HTTP_X_CSRFTOKEN=csrf)
    response = client.post(f"/app/c/{GROUP}/welcome/", {"welcome_text": "Hi"})
    assert response.status_code == 403


def test_logins_are_rate_limited(client: Client, token: str, settings: Any) -> None:
    settings.MINIAPP_LOGINS_PER_MINUTE = 3
    codes = [client.post("/app/login/", {"init_data": "bad"}).status_code for _ in range(4)]
    assert codes == [403, 403, 403, 429]


def test_a_session_expires(client: Client, token: str, settings: Any) -> None:
    from webapp import sessions

    login(client, token, CREATOR)
    assert client.get(f"/app/c/{GROUP}/").status_code == 200
    real = time.time
    try:
        sessions.time.time = lambda: real() + settings.MINIAPP_SESSION_SECONDS + 1  # type: ignore[attr-defined]
        assert client.get(f"/app/c/{GROUP}/").status_code == 404
    finally:
        sessions.time.time = real  # type: ignore[attr-defined]


def test_a_staff_session_opens_no_mini_app_page(admin_client: Client, token: str) -> None:
    assert admin_client.get(f"/app/c/{GROUP}/").status_code == 404
    assert "login" in admin_client.get("/app/").content.decode().lower()


def test_logout_ends_the_session(client: Client, token: str) -> None:
    login(client, token, CREATOR)
    client.post("/app/logout/")
    assert client.get(f"/app/c/{GROUP}/").status_code == 404


def test_a_new_login_ends_the_browsers_previous_session(client: Client, token: str) -> None:
    from tests.webapp.helpers import EDITOR

    login(client, token, CREATOR)
    old = client.cookies[COOKIE].value
    login(client, token, EDITOR)
    assert client.cookies[COOKIE].value != old
    stale = Client()
    stale.cookies[COOKIE] = old
    assert stale.get(f"/app/c/{GROUP}/").status_code == 404
    assert client.get(f"/app/c/{GROUP}/").status_code == 200
