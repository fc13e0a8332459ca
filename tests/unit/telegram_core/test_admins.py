"""Admin lockout protection: the owner stays, the list never empties."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from telegram_bot import admins
from telegram_bot.admins import Role
from telegram_bot.errors import AuthorizationError, ValidationError
from telegram_bot.models import BotAdmin


@pytest.fixture
def configured(settings: Any) -> Any:
    settings.OWNER_TELEGRAM_ID = 1000
    settings.ADMIN_TELEGRAM_IDS = [2000]
    return settings


@pytest.mark.django_db
def test_roles(configured: Any) -> None:
    BotAdmin.objects.create(telegram_id=3000)
    assert [admins.role_of(i) for i in (1000, 2000, 3000, 4000, None)] == [
        Role.OWNER,
        Role.ADMIN,
        Role.ADMIN,
        Role.USER,
        Role.USER,
    ]
    assert admins.admin_ids() == [1000, 2000, 3000]


@pytest.mark.django_db
def test_the_owner_and_environment_admins_cannot_be_removed(configured: Any) -> None:
    with pytest.raises(AuthorizationError, match="owner"):
        admins.admin_remove(telegram_id=1000)
    with pytest.raises(AuthorizationError, match="ADMIN_TELEGRAM_IDS"):
        admins.admin_remove(telegram_id=2000)
    with pytest.raises(ValidationError):
        admins.admin_remove(telegram_id=4000)


@pytest.mark.django_db
def test_the_last_admin_cannot_be_removed(settings: Any) -> None:
    settings.OWNER_TELEGRAM_ID = None
    settings.ADMIN_TELEGRAM_IDS = []
    admins.admin_add(telegram_id=5, added_by=None)
    admins.admin_add(telegram_id=6, added_by=None)
    admins.admin_remove(telegram_id=5)
    with pytest.raises(AuthorizationError, match="last admin"):
        admins.admin_remove(telegram_id=6)
    assert admins.admin_ids() == [6]


@pytest.mark.django_db
def test_admin_add_validates_and_is_idempotent(configured: Any) -> None:
    for bad in (0, -5, True, "7"):
        with pytest.raises(ValidationError):
            admins.admin_add(telegram_id=bad, added_by=1000)  # type: ignore[arg-type]
    admins.admin_add(telegram_id=7, added_by=1000, display_name="Ann")
    admins.admin_add(telegram_id=7, added_by=1000)
    assert BotAdmin.objects.filter(telegram_id=7).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_removals_never_empty_the_list(settings: Any) -> None:
    settings.OWNER_TELEGRAM_ID = None
    settings.ADMIN_TELEGRAM_IDS = []
    for admin_id in (5, 6):
        admins.admin_add(telegram_id=admin_id, added_by=None)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def remove(admin_id: int) -> None:
        try:
            barrier.wait()
            admins.admin_remove(telegram_id=admin_id)
        except AuthorizationError as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=remove, args=(i,)) for i in (5, 6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admins.admin_ids()) == 1
    assert len(errors) == 1


def test_a_token_without_owner_is_a_configuration_problem(settings: Any) -> None:
    settings.OWNER_TELEGRAM_ID = None
    settings.TELEGRAM_BOT_TOKEN = "1:abc"
    assert admins.check_admin_configuration() == [
        "OWNER_TELEGRAM_ID is not set: nobody could recover the admin list"
    ]
    settings.OWNER_TELEGRAM_ID = 1
    assert admins.check_admin_configuration() == []
