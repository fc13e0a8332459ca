"""The operators' admin pages: dead letters, bot admins, and no token anywhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_q.models import Schedule

from telegram_bot.admins import STAND_IN_IDS, Role, admin_add, role_of
from telegram_bot.errors import ValidationError
from telegram_bot.models import BotAdmin, DeliveryFailure
from telegram_bot.state import KVStore
from tests.builders import make_message_update
from tests.fakes.telegram import FakeTelegramServer


def poison(bot: FakeTelegramServer, post_update: Any) -> dict[str, Any]:
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    update = make_message_update("/start", chat_id=5, user_id=5)
    assert post_update(update)["X-Update-Outcome"] == "dead_letter"
    return update


def test_dead_letters_are_listed_with_type_error_and_payload(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    update = poison(bot, post_update)
    page = admin_client.get("/admin/dead-letters/").content.decode()
    assert f'data-update-id="{update["update_id"]}"' in page
    assert "TelegramApiError" in page and "message" in page and "chat not found" in page
    assert "/start" in page


def test_replay_runs_the_update_again_and_drops_the_letter(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, memory_store: KVStore
) -> None:
    update = poison(bot, post_update)
    response = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "replayed: processed" in response.content.decode()
    assert memory_store.get(f"dlq:{update['update_id']}") is None
    delivered = [c for c in bot.calls_to("sendMessage") if not c.failed]
    assert len(delivered) == 1


def test_a_replay_that_fails_again_keeps_the_letter(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, memory_store: KVStore
) -> None:
    update = poison(bot, post_update)
    bot.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    response = admin_client.post(f"/admin/dead-letters/{update['update_id']}/replay/", follow=True)
    assert "failed again" in response.content.decode()
    assert memory_store.get(f"dlq:{update['update_id']}") is not None


def test_drop_forgets_a_letter(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, memory_store: KVStore
) -> None:
    update = poison(bot, post_update)
    admin_client.post(f"/admin/dead-letters/{update['update_id']}/drop/")
    assert memory_store.get(f"dlq:{update['update_id']}") is None
    assert "No dead letters." in admin_client.get("/admin/dead-letters/").content.decode()


def test_an_update_id_beyond_64_bits_is_a_404_not_a_server_error(admin_client: Client) -> None:
    huge = "9" * 400
    for action in ("replay", "drop"):
        assert admin_client.post(f"/admin/dead-letters/{huge}/{action}/").status_code == 404


def test_dead_letter_pages_are_staff_only(bot: FakeTelegramServer, client: Client) -> None:
    assert client.get("/admin/dead-letters/").status_code == 302
    assert client.post("/admin/dead-letters/1/drop/").status_code == 302
    assert client.post("/admin/dead-letters/1/replay/").status_code == 302


def test_replay_and_drop_need_post(bot: FakeTelegramServer, admin_client: Client) -> None:
    assert admin_client.get("/admin/dead-letters/1/replay/").status_code == 405
    assert admin_client.get("/admin/dead-letters/1/drop/").status_code == 405


def test_the_last_admin_cannot_be_deleted_in_the_admin_site(
    bot: FakeTelegramServer, admin_client: Client, settings: Any
) -> None:
    settings.OWNER_TELEGRAM_ID = None
    only = BotAdmin.objects.create(telegram_id=5)
    response = admin_client.post(f"/admin/telegram_bot/botadmin/{only.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    response = admin_client.post(
        "/admin/telegram_bot/botadmin/",
        {"action": "delete_selected", "_selected_action": [only.pk], "post": "yes"},
        follow=True,
    )
    assert BotAdmin.objects.filter(telegram_id=5).exists()


def test_admins_are_added_and_removed_in_the_admin_site(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    response = admin_client.post(
        "/admin/telegram_bot/botadmin/add/", {"telegram_id": "-4", "display_name": "x"}
    )
    assert response.status_code == 200  # the form is shown again with the error
    assert not BotAdmin.objects.exists()
    admin_client.post(
        "/admin/telegram_bot/botadmin/add/", {"telegram_id": "44", "display_name": "Ann"}
    )
    admin = BotAdmin.objects.get(telegram_id=44)
    admin_client.post(f"/admin/telegram_bot/botadmin/{admin.pk}/delete/", {"post": "yes"})
    assert not BotAdmin.objects.exists()  # the owner remains, so this was allowed


def test_the_token_appears_on_no_admin_page(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client, settings: Any
) -> None:
    token = settings.TELEGRAM_BOT_TOKEN
    poison(bot, post_update)
    DeliveryFailure.objects.create(
        chat_id=1,
        purpose="t",
        error_class="X",
        description=f"https://api.telegram.org/bot{token}/sendMessage",
    )
    for url in (
        "/admin/",
        "/admin/dead-letters/",
        "/admin/telegram_bot/deliveryfailure/",
        "/admin/telegram_bot/botadmin/",
        "/admin/telegram_bot/blockedchat/",
    ):
        page = admin_client.get(url).content.decode()
        assert token not in page, url
        assert token.split(":")[1] not in page, url


def test_the_root_address_leads_to_the_admin_site(client: Client, admin_client: Client) -> None:
    response = client.get("/")
    assert (response.status_code, response["Location"]) == (302, "/admin/")
    assert client.get("/", follow=True).redirect_chain[-1][0].startswith("/admin/login/")
    assert admin_client.get("/", follow=True).status_code == 200


def test_the_browsers_favicon_request_is_answered_without_a_404(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 204
    assert "max-age" in response["Cache-Control"]


def _operator(*permissions: str) -> Client:
    account = User.objects.create_user("operator", password="unused", is_staff=True)
    account.user_permissions.set(
        [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (p.split(".", 1) for p in permissions)
        ]
    )
    client = Client()
    client.force_login(account)
    return client


def _schedule_form(func: str) -> dict[str, str]:
    now = timezone.now()
    return {
        "name": "innocent",
        "func": func,
        "args": "'id > /tmp/owned'",
        "kwargs": "",
        "schedule_type": "O",
        "minutes": "",
        "repeats": "-1",
        "next_run_0": now.strftime("%Y-%m-%d"),
        "next_run_1": now.strftime("%H:%M:%S"),
        "cron": "",
        "cluster": "",
        "intended_date_kwarg": "",
        "hook": "",
    }


def test_schedules_are_shown_and_never_written_in_the_admin_site(admin_client: Client) -> None:
    """A schedule names the function the worker runs: writing one here would run any code."""
    tick = Schedule.objects.create(name="tick", func="telegram_bot.tasks.jobs_tick")
    writer = _operator(
        "django_q.view_schedule",
        "django_q.add_schedule",
        "django_q.change_schedule",
        "django_q.delete_schedule",
    )
    for client in (writer, admin_client):  # the operator with every permission, a superuser
        assert client.get("/admin/django_q/schedule/").status_code == 200
        assert client.get(f"/admin/django_q/schedule/{tick.pk}/change/").status_code == 200
        client.post("/admin/django_q/schedule/add/", _schedule_form("subprocess.getoutput"))
        client.post(f"/admin/django_q/schedule/{tick.pk}/change/", _schedule_form("os.system"))
        client.post(f"/admin/django_q/schedule/{tick.pk}/delete/", {"post": "yes"})
        assert list(Schedule.objects.values_list("func", flat=True)) == [
            "telegram_bot.tasks.jobs_tick"
        ]


def test_changing_an_admin_row_cannot_make_another_account_an_admin(
    bot: FakeTelegramServer,
) -> None:
    row = BotAdmin.objects.create(telegram_id=44, display_name="Ann")
    client = _operator("telegram_bot.view_botadmin", "telegram_bot.change_botadmin")
    client.post(
        f"/admin/telegram_bot/botadmin/{row.pk}/change/",
        {"telegram_id": "666", "display_name": "Ann B.", "_save": "Save"},
    )
    row.refresh_from_db()
    assert (row.telegram_id, row.display_name) == (44, "Ann B.")  # the name only
    assert role_of(666) < Role.ADMIN


def test_telegram_stand_in_accounts_cannot_be_made_admins(
    bot: FakeTelegramServer, admin_client: Client
) -> None:
    for stand_in in sorted(STAND_IN_IDS):
        with pytest.raises(ValidationError):
            admin_add(telegram_id=stand_in, added_by=None)
        response = admin_client.post(
            "/admin/telegram_bot/botadmin/add/", {"telegram_id": str(stand_in), "display_name": ""}
        )
        assert response.status_code == 200  # the form again, with the reason
        assert "stand-in" in response.content.decode()
    assert not BotAdmin.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        "/admin/support/ticket/?created_at__year=10000",
        "/admin/content/post/?created_at__year=10000",
        "/admin/telegram_bot/job/?created_at__year=10000",
        "/admin/community/membermovement/?day__year=99999",
        "/admin/support/ticket/?status__exact=%00",
    ],
)
def test_a_list_filter_value_the_database_refuses_is_a_bad_link_not_a_500(
    admin_client: Client, query: str
) -> None:
    response = admin_client.get(query, follow=True)
    assert response.status_code == 200
    if "%00" in query and connection.vendor == "sqlite":
        return  # SQLite stores NUL: a filter that finds nothing; PostgreSQL refuses it
    assert response.redirect_chain == [(query.split("?")[0], 302)]
    assert "That filter is not valid here" in response.content.decode()
