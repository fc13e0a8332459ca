"""One validation of Telegram user ids and message ids (``telegram_bot.ids``), and every
feature that takes one: the update models, support, /addadmin and the admin site, moderation's
commands, the privacy pages. Each case below was accepted before."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from moderation.models import Warning
from support.models import Ticket
from telegram_bot import ids
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.pipeline.process import Outcome
from telegram_bot.privacy import check_user_id
from telegram_bot.updates import UpdateShapeError, parse_update
from tests.builders import make_callback_update, make_message_update, user
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import (
    DELETER,
    GROUP,
    MEMBER,
    answers,
    command,
    describe_group,
    member_message,
    ok_calls,
    run,
)

pytestmark = pytest.mark.django_db

TOO_BIG = 9007199254740993  # 2**53 + 1: not even exact as a double
SERVICE_ACCOUNTS = sorted(ids.SERVICE_ACCOUNT_IDS)  # 777000, 136817688, 1087968824


# --- the module ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        (" 42 ", 42),
        ("4503599627370495", ids.USER_ID_MAX),
        ("4503599627370496", None),
        (str(TOO_BIG), None),
        ("0", None),
        ("-5", None),
        ("+5", None),
        ("\u00b2", None),
        ("\u0663", None),
        ("1e3", None),
        ("", None),
    ],
)
def test_a_user_id_is_1_to_2_52_minus_1_in_ascii_digits(text: str, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(ids.IdError):
            ids.parse_user_id(text)
    else:
        assert ids.parse_user_id(text) == expected


@pytest.mark.parametrize("service", SERVICE_ACCOUNTS)
def test_telegram_service_accounts_are_user_ids_but_not_people(service: int) -> None:
    assert ids.is_user_id(service) and not ids.is_person(service)
    with pytest.raises(ids.IdError, match="stand-in"):
        ids.parse_person_id(str(service))


def test_message_ids_are_positive() -> None:
    assert ids.is_message_id(1) and not ids.is_message_id(0) and not ids.is_message_id(-1)
    assert not ids.is_message_id(True)
    assert ids.parse_message_id("17") == 17
    with pytest.raises(ids.IdError):
        ids.parse_message_id("-1")


# --- the update models ---------------------------------------------------------------------
def private(user_id: int, text: str = "/support my printer is on fire") -> dict[str, Any]:
    return make_message_update(text, chat_id=user_id, user_id=user_id, chat_type="private")


@pytest.mark.parametrize("user_id", [-5, 0, ids.USER_ID_MAX + 1, TOO_BIG, *SERVICE_ACCOUNTS])
def test_a_private_message_from_no_person_comes_without_a_sender(user_id: int) -> None:
    data = private(7)
    assert parse_update(data).user_id == 7
    data["message"]["from"] = user(user_id)
    assert parse_update(data).user is None


def test_an_anonymous_admin_in_its_group_keeps_its_sender() -> None:
    data = make_message_update("/ban 5", chat_id=GROUP, user_id=ids.GROUP_ANONYMOUS_BOT_ID)
    data["message"]["sender_chat"] = {"id": GROUP, "type": "supergroup", "title": "G"}
    assert parse_update(data).user_id == ids.GROUP_ANONYMOUS_BOT_ID


@pytest.mark.parametrize("message_id", [0, -1])
def test_a_message_id_that_is_not_positive_is_not_an_update(message_id: int) -> None:
    data = private(7)
    data["message"]["message_id"] = message_id
    with pytest.raises(UpdateShapeError, match="message_id"):
        parse_update(data)


@pytest.mark.parametrize("user_id", [-5, *SERVICE_ACCOUNTS])
def test_a_button_pressed_by_no_person_is_not_an_update(user_id: int) -> None:
    data = make_callback_update("sup:close:1", user_id=7)
    data["callback_query"]["from"] = user(user_id)
    with pytest.raises(UpdateShapeError, match="from"):
        parse_update(data)


def test_the_webhook_answers_400_for_a_negative_message_id(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    data = private(7)
    data["message"]["message_id"] = -3
    assert post_update(data).status_code == 400


# --- support -------------------------------------------------------------------------------
@pytest.mark.parametrize("user_id", [-5, ids.GROUP_ANONYMOUS_BOT_ID, ids.TELEGRAM_SERVICE_ID])
def test_no_ticket_is_opened_for_a_sender_who_is_no_person(
    bot: FakeTelegramServer, post_update: Any, user_id: int
) -> None:
    data = make_message_update(
        "/support help me", chat_id=user_id, user_id=user_id, chat_type="private"
    )
    response = post_update(data)
    assert response.status_code == 200
    assert not Ticket.objects.exists()
    data = make_message_update("/support help me", chat_id=5005, user_id=5005)
    post_update(data)
    assert Ticket.objects.get().user_id == 5005  # a person's opens one


# --- admins --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "arg", [str(TOO_BIG), str(ids.USER_ID_MAX + 1), "-3", "0", str(ids.GROUP_ANONYMOUS_BOT_ID)]
)
def test_addadmin_refuses_what_is_not_a_person(
    bot: FakeTelegramServer, post_update: Any, arg: str
) -> None:
    post_update(make_message_update(f"/addadmin {arg}", chat_id=OWNER_ID, user_id=OWNER_ID))
    assert not BotAdmin.objects.exists()
    assert not AuditEntry.objects.exists()
    [answer] = [c.params["text"] for c in bot.calls_to("sendMessage")]
    assert answer.startswith("Usage: /addadmin <user id>\n")


def test_addadmin_takes_the_largest_user_id(bot: FakeTelegramServer, post_update: Any) -> None:
    text = f"/addadmin {ids.USER_ID_MAX}"
    post_update(make_message_update(text, chat_id=OWNER_ID, user_id=OWNER_ID))
    assert BotAdmin.objects.get().telegram_id == ids.USER_ID_MAX


def test_the_admin_site_refuses_an_admin_id_out_of_range(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/telegram_bot/botadmin/add/", {"telegram_id": str(TOO_BIG), "display_name": ""}
    )
    assert response.status_code == 200  # the form again, with the reason
    assert "positive whole number" in response.content.decode()
    assert not BotAdmin.objects.exists()


# --- moderation ----------------------------------------------------------------------------
def test_purge_refuses_a_reply_to_a_later_message(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    later = member_message()
    purge = command("/purge", sender=DELETER, reply_to=later)
    later["message_id"] = purge["message"]["message_id"] + 2
    assert run(purge) == Outcome.PROCESSED
    assert ok_calls(bot, "deleteMessages") == []
    assert not AuditEntry.objects.exists()
    assert answers(bot) == ["Reply to an earlier message: /purge deletes from there on."]


def test_purge_replying_to_a_negative_message_id_deletes_nothing(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    negative = member_message()
    negative["message_id"] = -1
    purge = command("/purge", sender=DELETER, reply_to=negative)
    purge["message"]["message_id"] = 3  # once "4 message(s) from #-1", five ids deleted
    run(purge)
    assert ok_calls(bot, "deleteMessages") == []
    assert not AuditEntry.objects.exists()  # no "-1 message(s)"


@pytest.mark.parametrize("arg", ["-5", "0", str(TOO_BIG), str(ids.USER_ID_MAX + 1)])
def test_moderation_refuses_a_user_id_out_of_range(bot: FakeTelegramServer, arg: str) -> None:
    describe_group(bot)
    run(command(f"/ban {arg}"))
    assert answers(bot) == [f"{arg} is not a Telegram user id."]
    assert ok_calls(bot, "banChatMember") == []


@pytest.mark.parametrize("service", SERVICE_ACCOUNTS)
def test_moderation_does_not_warn_a_service_account(bot: FakeTelegramServer, service: int) -> None:
    describe_group(bot)
    run(command(f"/warn {service} spam"))
    run(command(f"/warns {service}"))
    assert not Warning.objects.exists()
    assert all("stand-in" in answer for answer in answers(bot))
    assert len(answers(bot)) == 2


def test_moderation_still_takes_a_member_by_id(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    run(command(f"/warn {MEMBER} spam"))
    assert Warning.objects.get().user_id == MEMBER


# --- privacy -------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [str(TOO_BIG), *map(str, SERVICE_ACCOUNTS)])
def test_the_privacy_pages_refuse_what_is_not_a_person(client: Client, value: str) -> None:
    with pytest.raises(ids.IdError):
        check_user_id(value)
    operator = User.objects.create_user("operator", password="x", is_staff=True)
    operator.user_permissions.add(*Permission.objects.filter(codename="erase_personal_data"))
    client.force_login(operator)
    response = client.post("/admin/privacy/erase/", {"user_id": value, "confirm": value})
    assert response.status_code == 400
    assert not AuditEntry.objects.exists()
