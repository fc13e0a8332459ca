"""The operators' admin pages: dead letters, bot admins, and no token anywhere."""

from __future__ import annotations

from typing import Any

from django.test import Client

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
