"""The webhook path, step by step, through Django into the fake Bot API server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from telegram_bot.state import KVStore, open_store, override_store
from tests.builders import make_callback_update, make_message_update
from tests.conftest import WEBHOOK_SECRET
from tests.fakes.telegram import FakeTelegramServer

SAMPLES = Path(__file__).resolve().parents[1] / "fakes" / "botapi" / "updates"


def sent_texts(bot: FakeTelegramServer, chat_id: int | None = None) -> list[str]:
    return [
        call.params["text"]
        for call in bot.calls_to("sendMessage")
        if chat_id is None or call.params["chat_id"] == chat_id
    ]


def test_start_gets_exactly_one_reply(bot: FakeTelegramServer, post_update: Any) -> None:
    response = post_update(make_message_update("/start", chat_id=5, user_id=5))
    assert response.status_code == 200
    assert response.json() == {"ok": True, "outcome": "processed"}
    assert len(sent_texts(bot, 5)) == 1
    assert "Hello" in sent_texts(bot, 5)[0]


def test_a_redelivered_update_is_answered_200_and_not_processed_again(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    second = post_update(update)
    assert second.status_code == 200
    assert second["X-Update-Outcome"] == "duplicate"
    assert len(sent_texts(bot)) == 1


def test_an_update_claimed_by_another_worker_gets_503(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    memory_store.set(f"upd:{update['update_id']}", {"s": "claim", "o": "other"}, ttl_ms=60_000)
    response = post_update(update)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert bot.calls == []


def test_an_expired_claim_of_a_dead_worker_is_taken_over(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    import time

    update = make_message_update("/start", chat_id=5, user_id=5)
    memory_store.set(f"upd:{update['update_id']}", {"s": "claim", "o": "dead"}, ttl_ms=50)
    time.sleep(0.1)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert len(sent_texts(bot)) == 1


@pytest.mark.parametrize(
    "secret", [None, "", "wrong-secret", WEBHOOK_SECRET + "x", WEBHOOK_SECRET[:-1]]
)
def test_a_missing_or_wrong_secret_gets_401_and_nothing_happens(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore, secret: str | None
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    response = post_update(update, secret=secret)
    assert response.status_code == 401
    assert bot.calls == []
    assert list(memory_store.scan_all("upd:")) == []
    assert list(memory_store.scan_all("rl:")) == []


def test_without_a_configured_secret_everything_is_refused(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.TELEGRAM_WEBHOOK_SECRET = ""
    assert post_update(make_message_update("/start"), secret="").status_code == 401
    assert bot.calls == []


def test_only_post_is_allowed(bot: FakeTelegramServer, client: Client) -> None:
    for method in ("get", "put", "delete", "patch"):
        response = getattr(client, method)("/telegram/webhook")
        assert response.status_code == 405
        assert response["Allow"] == "POST"


def test_only_json_is_accepted(bot: FakeTelegramServer, client: Client) -> None:
    body = json.dumps(make_message_update("/start"))
    for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
        response = client.post(
            "/telegram/webhook",
            data=body,
            content_type=content_type,
            HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
        )
        assert response.status_code == 415
    response = client.post(
        "/telegram/webhook",
        data=body,
        content_type="application/json; charset=utf-8",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert response.status_code == 200


def test_a_body_over_one_mebibyte_gets_413(bot: FakeTelegramServer, client: Client) -> None:
    update = make_message_update("x" * (1024 * 1024))
    response = client.post(
        "/telegram/webhook",
        data=json.dumps(update),
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert response.status_code == 413
    assert bot.calls == []


@pytest.mark.parametrize("declared", ["\u00b2", "-1", "1e3", "12 "])
def test_a_content_length_that_is_not_a_byte_count_gets_413(
    bot: FakeTelegramServer, client: Client, declared: str
) -> None:
    response = client.post(
        "/telegram/webhook",
        data=json.dumps(make_message_update("/start")),
        content_type="application/json",
        CONTENT_LENGTH=declared,
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert response.status_code == 413  # "²" is a digit to str.isdigit(), not to int()
    assert bot.calls == []


@pytest.mark.parametrize("body", [b"{not json", b" ", b"\xff\xfe", b"[1, 2"])
def test_a_body_that_is_not_json_gets_400(
    bot: FakeTelegramServer, client: Client, body: bytes
) -> None:
    response = client.post(
        "/telegram/webhook",
        data=body,
        content_type="application/json",
        HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=WEBHOOK_SECRET,
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "update",
    [
        [],
        "text",
        42,
        {},
        {"update_id": "1"},
        {"update_id": -1},
        {"update_id": True},
        {"update_id": 1, "message": "hi"},
        {"update_id": 1, "message": {"text": "no ids"}},
        {
            "update_id": 1,
            "message": {"message_id": 1, "date": 1, "chat": {"id": "x", "type": "private"}},
        },
        {"update_id": 1, "callback_query": {"id": 5, "from": {"id": 1}}},
        {"update_id": 1, "chat_join_request": {"chat": {"id": -1, "type": "group"}}},
        {
            "update_id": 1,
            "message": {"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}},
            "edited_message": {"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}},
        },
    ],
    ids=range(13),
)
def test_what_is_not_an_update_gets_400(
    bot: FakeTelegramServer, post_update: Any, update: Any
) -> None:
    response = post_update(update)
    assert response.status_code == 400
    assert "Update" in response.json()["error"] or "JSON" in response.json()["error"]
    assert bot.calls == []


def test_an_update_type_we_do_not_handle_is_200_and_ignored(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    response = post_update({"update_id": 5, "poll": {"id": "1", "question": "?"}})
    assert response.status_code == 200
    assert response["X-Update-Outcome"] == "ignored"
    assert post_update({"update_id": 6})["X-Update-Outcome"] == "ignored"


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_sample_update_is_parsed_and_routed(
    bot: FakeTelegramServer, post_update: Any, path: Path
) -> None:
    update = json.loads(path.read_text())
    response = post_update(update)
    assert response.status_code == 200, response.content
    assert response["X-Update-Outcome"] in ("processed", "ignored", "refused")


def test_the_kv_store_down_gives_503_and_a_later_delivery_succeeds(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    update = make_message_update("/start", chat_id=5, user_id=5)
    with override_store(open_store("redis://127.0.0.1:1/0")):  # nothing listens there
        response = post_update(update)
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    assert bot.calls == []
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert len(sent_texts(bot)) == 1


def test_a_handler_that_raises_gives_200_and_a_dead_letter(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    bot.fail_next("sendMessage", status=400, description="Bad Request: message text is empty")
    update = make_message_update("/start", chat_id=5, user_id=5)
    response = post_update(update)
    assert response.status_code == 200
    assert response["X-Update-Outcome"] == "dead_letter"
    letter = memory_store.get(f"dlq:{update['update_id']}")
    assert letter["error_class"] == "TelegramApiError"
    assert letter["update"] == update
    # Not processed again when Telegram re-sends it.
    assert post_update(update)["X-Update-Outcome"] == "duplicate"


def test_an_unknown_command_gets_a_hint_in_private_and_silence_in_groups(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(make_message_update("/nonsense", chat_id=5, user_id=5))
    post_update(make_message_update("/nonsense", chat_id=-1005, user_id=5))
    assert sent_texts(bot) == ["I don't know that command. Send /help for the list."]


def test_a_callback_without_route_is_ignored(bot: FakeTelegramServer, post_update: Any) -> None:
    assert post_update(make_callback_update("nobody:handles"))["X-Update-Outcome"] == "ignored"


@pytest.mark.django_db(transaction=True)
def test_end_to_end_over_real_http(
    live_server: Any, fake_telegram: FakeTelegramServer, settings: Any, memory_store: KVStore
) -> None:
    """Telegram -> HTTP -> our server -> HTTP -> the fake Bot API; nothing mocked."""
    import httpx

    settings.TELEGRAM_API_BASE_URL = fake_telegram.base_url
    settings.TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET
    update = make_message_update("/start", chat_id=77, user_id=77)
    with httpx.Client(base_url=live_server.url) as http:
        headers = {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}
        first = http.post("/telegram/webhook", json=update, headers=headers)
        again = http.post("/telegram/webhook", json=update, headers=headers)
        wrong = http.post(
            "/telegram/webhook",
            json=make_message_update("/start", chat_id=78),
            headers={"X-Telegram-Bot-Api-Secret-Token": "nope"},
        )
    assert (first.status_code, again.status_code, wrong.status_code) == (200, 200, 401)
    assert [c.params["chat_id"] for c in fake_telegram.calls_to("sendMessage")] == [77]


def test_a_command_for_another_bot_is_ignored(bot: FakeTelegramServer, post_update: Any) -> None:
    other = post_update(make_message_update("/start@other_bot", chat_id=-100, user_id=5))
    ours = post_update(make_message_update("/start@fake_bot", chat_id=-100, user_id=5))
    assert (other["X-Update-Outcome"], ours["X-Update-Outcome"]) == ("ignored", "processed")
    assert len(sent_texts(bot)) == 1


def test_the_webhooks_openapi_schema_is_for_staff_only(
    client: Client, django_user_model: Any
) -> None:
    anonymous = client.get("/telegram/openapi.json")
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/admin/login/")
    client.force_login(django_user_model.objects.create_user("member"))
    assert client.get("/telegram/openapi.json").status_code == 302  # a user, not staff


def test_the_webhook_is_documented_in_its_own_openapi_schema(admin_client: Client) -> None:
    response = admin_client.get("/telegram/openapi.json")
    assert response.status_code == 200
    operation = response.json()["paths"]["/telegram/webhook"]["post"]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["update_id"]
    assert {"message", "callback_query", "chat_join_request"} <= set(schema["properties"])
    assert {"200", "400", "401", "413", "415", "503"} <= set(operation["responses"])
    assert "X-Update-Outcome" in operation["responses"]["200"]["headers"]

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [key for key, _ in pairs]
        assert len(keys) == len(set(keys)), f"a key twice: {keys}"  # ninja's own 200 was
        return dict(pairs)

    json.loads(response.content, object_pairs_hook=unique)
    assert set(response.json()["paths"]["/telegram/webhook"]) == {"post"}
