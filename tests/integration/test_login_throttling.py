"""Brute force on the admin login: after LOGIN_FAILURE_LIMIT wrong passwords the right one is
refused too (429) until the cool-off has passed; the lock is per user name and client address
by default, and the client address behind the TLS proxy is the one the proxy saw."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.utils import timezone

from telegram_bot.login_throttle import client_ip
from tests.unit.config.test_settings import run_manage

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/"
PASSWORD = "correct horse battery staple 42"


@pytest.fixture
def operator(settings: Any) -> User:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 5
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)
    settings.AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
    settings.TRUSTED_PROXY_COUNT = 0
    return User.objects.create_user("operator", password=PASSWORD, is_staff=True)


def log_in(password: str, *, address: str = "203.0.113.7", **headers: Any) -> tuple[int, bool]:
    """(status, logged in) of one login form submission from ``address``."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        LOGIN, {"username": "operator", "password": password, "next": "/admin/"}, **headers
    )
    return response.status_code, "_auth_user_id" in client.session


def test_the_right_password_is_refused_after_too_many_wrong_ones(operator: User) -> None:
    for _ in range(4):
        assert log_in("wrong") == (200, False)  # the form again, with its error
    assert log_in("wrong") == (429, False)  # the fifth failure locks
    assert log_in(PASSWORD) == (429, False)


def test_a_few_failures_then_success_starts_counting_again(operator: User) -> None:
    for _ in range(2):
        for _ in range(4):
            log_in("wrong")
        assert log_in(PASSWORD) == (302, True)


def test_the_lock_is_per_user_name_and_address(operator: User) -> None:
    for _ in range(5):
        log_in("wrong", address="198.51.100.1")
    assert log_in(PASSWORD, address="198.51.100.1") == (429, False)
    assert log_in(PASSWORD, address="198.51.100.2") == (302, True)


def test_the_lock_ends_after_the_cool_off(operator: User) -> None:
    for _ in range(5):
        log_in("wrong")
    assert log_in(PASSWORD)[0] == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert log_in(PASSWORD) == (302, True)


def test_behind_the_proxy_a_forged_forwarded_address_does_not_escape_the_lock(
    operator: User, settings: Any
) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    for number in range(5):
        # The client varies the left part; the proxy appends what it saw: 192.0.2.9.
        forged = f"10.0.0.{number}, 192.0.2.9"
        log_in("wrong", address="127.0.0.1", HTTP_X_FORWARDED_FOR=forged)
    assert log_in(PASSWORD, address="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.9, 192.0.2.9")[0] == (
        429
    )
    # Another client behind the same proxy is not locked.
    assert log_in(PASSWORD, address="127.0.0.1", HTTP_X_FORWARDED_FOR="192.0.2.10") == (302, True)


@pytest.mark.parametrize(
    ("hops", "remote", "forwarded", "expected"),
    [
        (0, "192.0.2.1", "10.0.0.1", "192.0.2.1"),
        (1, "127.0.0.1", "10.0.0.1, 198.51.100.4", "198.51.100.4"),
        (2, "127.0.0.1", "10.0.0.1, 198.51.100.4, 172.16.0.2", "198.51.100.4"),
        (2, "127.0.0.1", "198.51.100.4", "127.0.0.1"),  # fewer hops than proxies
        (1, "127.0.0.1", "not-an-address", "127.0.0.1"),
        (1, "127.0.0.1", "", "127.0.0.1"),
        (1, "127.0.0.1", "2001:db8::1", "2001:db8::1"),
    ],
)
def test_the_client_address(
    settings: Any, hops: int, remote: str, forwarded: str, expected: str
) -> None:
    settings.TRUSTED_PROXY_COUNT = hops
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"LOGIN_LOCKOUT_BY": "cookie"}, "LOGIN_LOCKOUT_BY: must be one of"),
        ({"LOGIN_FAILURE_LIMIT": "0"}, "LOGIN_FAILURE_LIMIT"),
        ({"LOGIN_COOLOFF_MINUTES": "soon"}, "LOGIN_COOLOFF_MINUTES"),
        ({"LOGIN_THROTTLING": "perhaps"}, "LOGIN_THROTTLING"),
    ],
)
def test_a_bad_throttling_setting_stops_the_start(env: dict[str, str], says: str) -> None:
    result = run_manage({"DJANGO_SECRET_KEY": "x" * 50, **env}, "check")
    assert result.returncode == 2
    assert says in result.stderr


# --- the admin site's pages of attempts and logs (registered by telegram_bot/admin.py) -------
def test_cleaning_up_removes_the_attempts_past_the_cool_off_only(
    operator: User, admin_client: Client
) -> None:
    old = AccessAttempt.objects.create(
        username="x", ip_address="10.0.0.1", user_agent="", failures_since_start=5
    )
    AccessAttempt.objects.filter(pk=old.pk).update(
        attempt_time=timezone.now() - timedelta(minutes=16)
    )
    fresh = AccessAttempt.objects.create(
        username="y", ip_address="10.0.0.2", user_agent="", failures_since_start=5
    )
    response = admin_client.post(
        "/admin/axes/accessattempt/",
        {"action": "cleanup_expired_attempts", "_selected_action": [str(fresh.pk)]},
        follow=True,
    )
    assert list(AccessAttempt.objects.values_list("pk", flat=True)) == [fresh.pk]
    assert "1 expired attempt cleaned up." in response.content.decode()


def test_a_viewer_of_the_attempts_is_not_offered_the_cleanup(operator: User) -> None:
    from django.contrib.auth.models import Permission

    operator.user_permissions.add(Permission.objects.get(codename="view_accessattempt"))
    client = Client()
    client.force_login(operator)
    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200
    assert "cleanup_expired_attempts" not in page.content.decode()
    for path in ("/admin/axes/accesslog/", "/admin/axes/accessfailurelog/"):
        assert client.get(path).status_code == 403  # no view permission for the logs


def test_the_logs_are_shown_to_who_may_view_them(admin_client: Client) -> None:
    for path in (
        "/admin/axes/accessattempt/",
        "/admin/axes/accesslog/",
        "/admin/axes/accessfailurelog/",
    ):
        assert admin_client.get(path).status_code == 200, path
        assert admin_client.get(f"{path}add/").status_code == 403, path
