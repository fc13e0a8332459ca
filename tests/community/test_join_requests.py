"""Join requests decided by admins in Telegram, end to end through the webhook and the fake
Bot API server: the request and the button press both arrive as updates."""

from __future__ import annotations

from typing import Any

import pytest

from community.records import CLOSED, DONE, PENDING
from telegram_bot.models import BlockedChat, BotAdmin
from telegram_bot.state import KVStore
from tests.builders import make_callback_update, make_join_request_update
from tests.community.helpers import (
    alerts,
    button_data,
    copy_of,
    edits_to,
    notifications,
    press_update,
    record_of,
    succeeded,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

CHAT = -100555
REQUESTER = 2002


def request_join(post_update: Any, **kwargs: Any) -> dict[str, Any]:
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT, **kwargs)
    assert post_update(update)["X-Update-Outcome"] == "processed"
    return update


def test_it_notifies_admins_and_approves_once_end_to_end(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    update = make_join_request_update(user_id=REQUESTER, chat_id=CHAT, bio="Likes cats")
    update["chat_join_request"]["invite_link"] = {
        "invite_link": "https://t.me/+AbCdEf",
        "creator": {"id": OWNER_ID, "is_bot": False, "first_name": "Owner"},
        "creates_join_request": True,
        "is_primary": False,
        "is_revoked": False,
        "name": "spring campaign",
    }
    assert post_update(update)["X-Update-Outcome"] == "processed"
    [note] = notifications(bot)
    assert note.params["chat_id"] == OWNER_ID
    text = note.params["text"]
    for part in (
        "Join request to Test group (-100555)",
        "From: Test, id 2002",
        "Language: en",
        "Bio: Likes cats",
        "Invite link: https://t.me/+AbCdEf (spring campaign)",
    ):
        assert part in text
    data = button_data(note)
    assert set(data) == {"Approve", "Decline"}
    assert all(len(value.encode()) <= 64 for value in data.values())

    press = press_update(
        data["Approve"],
        user_id=OWNER_ID,
        name="Olga",
        message_id=copy_of(data["Approve"], OWNER_ID),
    )
    assert post_update(press)["X-Update-Outcome"] == "processed"

    assert [call.method for call in bot.calls] == [
        "sendMessage",
        "approveChatJoinRequest",
        "editMessageText",
        "answerCallbackQuery",
    ]
    [approve] = bot.calls_to("approveChatJoinRequest")
    assert approve.params == {"chat_id": CHAT, "user_id": REQUESTER}
    [edit] = bot.calls_to("editMessageText")
    assert edit.params["text"].startswith(text)
    assert "Approved by Olga at " in edit.params["text"]
    assert "reply_markup" not in edit.params  # the buttons are gone
    [answer] = bot.calls_to("answerCallbackQuery")
    assert answer.params["text"] == "Approved." and not answer.params.get("show_alert")
    record = record_of(data["Approve"])
    assert record is not None and record.status == DONE


def test_it_declines_and_a_later_press_gets_already_decided(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    BotAdmin.objects.create(telegram_id=11)
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    post_update(press_update(data["Decline"], user_id=OWNER_ID, name="Olga"))
    post_update(press_update(data["Approve"], user_id=11, name="Ivan"))
    assert len(bot.calls_to("declineChatJoinRequest")) == 1
    assert bot.calls_to("approveChatJoinRequest") == []
    [alert] = alerts(bot)
    assert alert.startswith("Already decided by Olga at ") and alert.endswith(": declined.")
    for admin_id in (OWNER_ID, 11):
        [edit] = edits_to(bot, admin_id)
        assert "Declined by Olga at " in edit.params["text"]


def test_it_refuses_a_non_admin_replaying_a_captured_callback(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    for _ in range(2):  # every replay is answered, not only the first in a window
        replay = press_update(data["Approve"], user_id=7, message_id=copy_of(data["Approve"], 1000))
        assert post_update(replay)["X-Update-Outcome"] == "processed"
    assert alerts(bot) == ["Only admins can decide join requests."] * 2
    assert bot.calls_to("approveChatJoinRequest") == []
    assert bot.calls_to("editMessageText") == []
    record = record_of(data["Approve"])
    assert record is not None and record.status == PENDING and record.decision is None
    # The request is still there to decide.
    post_update(press_update(data["Approve"], user_id=OWNER_ID))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


def test_it_checks_that_the_presser_is_an_admin_now(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    admin = BotAdmin.objects.create(telegram_id=11)
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    admin.delete()  # removed after the notification went out
    post_update(press_update(data["Approve"], user_id=11))
    assert alerts(bot) == ["Only admins can decide join requests."]
    assert bot.calls_to("approveChatJoinRequest") == []


@pytest.mark.parametrize(
    "tamper",
    [
        lambda data: data[:-1] + ("A" if data[-1] != "A" else "B"),  # another token
        lambda data: data + "x",  # longer token
        lambda data: data[:-1],  # shorter token
        lambda data: data.replace("jr:a:", "jr:x:"),  # unknown action
        lambda data: data.replace("jr:a:", "jr:a::"),
        lambda data: "jr:a:" + "../" * 4,
        lambda data: "jr:",
        lambda data: f"jr:a:{CHAT}:{REQUESTER}",  # guessed from the ids
    ],
)
def test_it_refuses_a_tampered_callback_and_changes_nothing(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore, tamper: Any
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])["Approve"]
    before = record_of(data)
    post_update(press_update(tamper(data), user_id=OWNER_ID))
    [alert] = alerts(bot)
    assert alert in ("This button is not valid.", "This request is no longer pending.")
    assert bot.calls_to("approveChatJoinRequest") == []
    assert bot.calls_to("declineChatJoinRequest") == []
    assert bot.calls_to("editMessageText") == []
    assert record_of(data) == before


def test_it_refuses_a_stale_button_whose_record_expired(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])["Approve"]
    memory_store.delete(f"jr:r:{data.rsplit(':', 1)[1]}")
    post_update(press_update(data, user_id=OWNER_ID))
    assert alerts(bot) == ["This request is no longer pending."]
    assert bot.calls_to("approveChatJoinRequest") == []


@pytest.mark.parametrize(
    "description",
    ["Bad Request: HIDE_REQUESTER_MISSING", "Bad Request: USER_ALREADY_PARTICIPANT"],
)
def test_it_says_so_when_telegram_already_handled_the_request(
    bot: FakeTelegramServer, post_update: Any, description: str
) -> None:
    from telegram_bot.jobs.models import Job, JobStatus

    BotAdmin.objects.create(telegram_id=11)
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    bot.fail_next("approveChatJoinRequest", status=400, description=description)
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    # No retry: the decision's watchdog is cancelled.
    assert (
        not Job.objects.filter(kind="community.decide").exclude(status=JobStatus.CANCELLED).exists()
    )
    for admin_id in (OWNER_ID, 11):
        [edit] = edits_to(bot, admin_id)
        assert "Already handled in Telegram" in edit.params["text"]
        assert "Approve by Olga at " in edit.params["text"]
        assert "reply_markup" not in edit.params
    assert alerts(bot)[0].startswith("Already handled in Telegram")
    record = record_of(data["Approve"])
    assert record is not None and record.status == CLOSED
    post_update(press_update(data["Decline"], user_id=11))
    assert bot.calls_to("declineChatJoinRequest") == []
    assert alerts(bot)[1].startswith("Already handled in Telegram")


def test_it_puts_the_request_back_when_telegram_refuses_for_another_reason(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])
    bot.fail_next(
        "approveChatJoinRequest", status=400, description="Bad Request: CHAT_ADMIN_REQUIRED"
    )
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    [edit] = edits_to(bot, OWNER_ID)
    assert "Approve by Olga failed: Bad Request: CHAT_ADMIN_REQUIRED" in edit.params["text"]
    assert "still pending" in edit.params["text"]
    assert button_data(edit) == data  # the same buttons, still working
    assert alerts(bot) == ["Telegram refused: Bad Request: CHAT_ADMIN_REQUIRED"]
    post_update(press_update(data["Approve"], user_id=OWNER_ID, name="Olga"))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1


def test_one_admin_who_blocked_the_bot_does_not_stop_the_others(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    for admin_id in (11, 12):
        BotAdmin.objects.create(telegram_id=admin_id)
    bot.block_chat(12)
    request_join(post_update)
    assert sorted(call.params["chat_id"] for call in notifications(bot)) == [11, OWNER_ID]
    assert BlockedChat.objects.filter(chat_id=12).exists()
    data = button_data(notifications(bot)[0])["Approve"]
    record = record_of(data)
    assert record is not None and sorted(chat for chat, _ in record.copies) == [11, OWNER_ID]

    post_update(press_update(data, user_id=11, name="Ivan", message_id=copy_of(data, 11)))
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    edited = sorted(call.params["chat_id"] for call in succeeded(bot, "editMessageText"))
    assert edited == [11, OWNER_ID]
    assert edits_to(bot, 12) == []


def test_a_newer_request_from_the_same_user_replaces_the_older_one(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    request_join(post_update)
    first, second = (button_data(call) for call in notifications(bot))
    [edit] = edits_to(bot, OWNER_ID)
    assert "replaced by a newer request" in edit.params["text"]
    post_update(press_update(first["Approve"], user_id=OWNER_ID))
    assert bot.calls_to("approveChatJoinRequest") == []
    post_update(press_update(second["Approve"], user_id=OWNER_ID))
    assert len(bot.calls_to("approveChatJoinRequest")) == 1


def test_the_panel_lists_pending_requests_with_the_same_buttons(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    post_update(make_join_request_update(user_id=2003, chat_id=CHAT))
    first = button_data(notifications(bot)[0])
    post_update(make_callback_update("jr:list", user_id=OWNER_ID, message_id=900))
    [page] = edits_to(bot, OWNER_ID)
    assert page.params["message_id"] == 900
    assert "Pending join requests: 2" in page.params["text"]
    listed = button_data(page)
    assert listed["Approve 1"] == first["Approve"]
    assert listed["Decline 1"] == first["Decline"]
    assert listed["Back"] == "panel:home"

    # Deciding from the panel edits the notification copies and refreshes the panel page.
    press = press_update(
        listed["Approve 1"],
        user_id=OWNER_ID,
        message_id=900,
        reply_markup=page.params["reply_markup"],
    )
    post_update(press)
    assert len(bot.calls_to("approveChatJoinRequest")) == 1
    refreshed = edits_to(bot, OWNER_ID)[-1]
    assert refreshed.params["message_id"] == 900
    assert "Pending join requests: 1" in refreshed.params["text"]
    assert first["Approve"] not in str(refreshed.params["reply_markup"])
    assert any(
        "Approved by Test" in call.params["text"]
        and call.params["message_id"] == copy_of(first["Approve"], OWNER_ID)
        for call in edits_to(bot, OWNER_ID)
    )


def test_the_panel_page_is_for_admins_and_listed_in_the_panel(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    from tests.builders import make_message_update

    post_update(make_message_update("/panel", chat_id=OWNER_ID, user_id=OWNER_ID))
    keyboard = bot.calls_to("sendMessage")[-1].params["reply_markup"]["inline_keyboard"]
    assert ["jr:list"] in [[button["callback_data"] for button in row] for row in keyboard]
    outcome = post_update(make_callback_update("jr:list", user_id=7))["X-Update-Outcome"]
    assert outcome == "refused"
    assert bot.calls_to("editMessageText") == []


def test_refreshing_an_unchanged_panel_page_is_not_an_error(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    for _ in range(2):
        refresh = make_callback_update("jr:list", user_id=OWNER_ID, message_id=900)
        assert post_update(refresh)["X-Update-Outcome"] == "processed"
    assert "message is not modified" in bot.calls_to("editMessageText")[-1].description


def test_a_press_too_old_to_answer_still_decides_once(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    request_join(post_update)
    data = button_data(notifications(bot)[0])["Approve"]
    bot.fail_next(
        "answerCallbackQuery",
        status=400,
        description="Bad Request: query is too old and response timeout expired",
    )
    assert post_update(press_update(data, user_id=OWNER_ID))["X-Update-Outcome"] == "processed"
    assert len(succeeded(bot, "approveChatJoinRequest")) == 1
    record = record_of(data)
    assert record is not None and record.status == DONE
