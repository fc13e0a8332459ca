"""The fake Bot API's chat-member model: answers fit the spec, and Telegram's rights rules
give Telegram's errors."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from tests.fakes import telegram_members as tm
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegram, FakeTelegramTransport

BOT_ID = int(FAKE_TOKEN.split(":")[0])
GROUP = -100777


@pytest.fixture
def fake() -> FakeTelegram:
    return FakeTelegram()


@pytest.fixture
def client(fake: FakeTelegram) -> Iterator[TelegramClient]:
    client = TelegramClient(FAKE_TOKEN, transport=FakeTelegramTransport(fake))
    yield client
    client.close()


def _error(call: object) -> str:
    with pytest.raises(TelegramApiError) as info:
        call()  # type: ignore[operator]
    return info.value.description


def _describe(fake: FakeTelegram, *, bot_rights: dict[str, bool]) -> None:
    fake.set_chat_member(GROUP, 1, "creator", first_name="Owner")
    fake.set_chat_member(GROUP, 2, "administrator", first_name="Mod", can_restrict_members=True)
    fake.set_chat_member(GROUP, BOT_ID, "administrator", is_bot=True, **bot_rights)


def test_every_answer_fits_the_spec(fake: FakeTelegram, client: TelegramClient) -> None:
    _describe(fake, bot_rights={"can_restrict_members": True, "can_delete_messages": True})
    until = int(time.time()) + 3600
    assert client.restrict_chat_member(
        chat_id=GROUP, user_id=5, permissions={"can_send_messages": False}, until_date=until
    )
    assert client.ban_chat_member(chat_id=GROUP, user_id=6)
    admins = client.get_chat_administrators(chat_id=GROUP)
    members = [*admins, *(client.get_chat_member(chat_id=GROUP, user_id=u) for u in (5, 6, 7))]
    for member in members:
        assert fake.spec.check(member, ["ChatMember"]) is None, member
    assert [m["status"] for m in admins] == ["creator", "administrator", "administrator"]
    assert client.get_chat_member(chat_id=GROUP, user_id=5)["until_date"] == until
    assert client.get_chat_member(chat_id=GROUP, user_id=6)["status"] == "kicked"
    assert client.unban_chat_member(chat_id=GROUP, user_id=6, only_if_banned=True)
    assert client.get_chat_member(chat_id=GROUP, user_id=6)["status"] == "left"
    # Lifting every permission makes a restricted member a member again.
    lift = dict.fromkeys(tm.MEMBER_PERMISSIONS[:11], True)
    assert client.restrict_chat_member(chat_id=GROUP, user_id=5, permissions=lift)
    assert client.get_chat_member(chat_id=GROUP, user_id=5)["status"] == "member"


def test_an_undescribed_chat_has_the_bot_as_a_full_admin(client: TelegramClient) -> None:
    [bot] = client.get_chat_administrators(chat_id=-100999)
    assert bot["user"]["id"] == BOT_ID and bot["can_restrict_members"] is True
    assert client.ban_chat_member(chat_id=-100999, user_id=5)


def test_rights_and_targets(fake: FakeTelegram, client: TelegramClient) -> None:
    _describe(fake, bot_rights={})
    mute = {"can_send_messages": False}
    assert _error(
        lambda: client.restrict_chat_member(chat_id=GROUP, user_id=5, permissions=mute)
    ) == (tm.NOT_ENOUGH_RIGHTS)
    assert _error(lambda: client.ban_chat_member(chat_id=GROUP, user_id=5)) == (
        tm.NOT_ENOUGH_RIGHTS
    )
    assert _error(lambda: client.delete_message(chat_id=GROUP, message_id=40)) == tm.CANT_DELETE
    fake.set_chat_member(GROUP, BOT_ID, "administrator", is_bot=True, can_restrict_members=True)
    assert _error(lambda: client.ban_chat_member(chat_id=GROUP, user_id=2)) == tm.USER_IS_ADMIN
    assert _error(lambda: client.ban_chat_member(chat_id=GROUP, user_id=1)) == (
        tm.CANT_REMOVE_OWNER
    )
    assert _error(lambda: client.ban_chat_member(chat_id=GROUP, user_id=BOT_ID)) == (
        tm.CANT_RESTRICT_SELF
    )
    assert _error(
        lambda: client.restrict_chat_member(chat_id=-4242, user_id=5, permissions=mute)
    ) == (tm.SUPERGROUP_ONLY)


def test_until_dates_outside_telegrams_range_mean_forever(
    fake: FakeTelegram, client: TelegramClient
) -> None:
    now = int(time.time())
    for user_id, until in ((5, now + 10), (6, now + 400 * 86400), (7, now + 86400)):
        client.ban_chat_member(chat_id=GROUP, user_id=user_id, until_date=until)
    assert [fake.chat_member(GROUP, u)["until_date"] for u in (5, 6, 7)] == [0, 0, now + 86400]


def test_deleting(fake: FakeTelegram, client: TelegramClient) -> None:
    _describe(fake, bot_rights={"can_delete_messages": True})
    fake.note_message(GROUP, 10, date=int(time.time()) - 49 * 3600, user_id=5)
    assert _error(lambda: client.delete_message(chat_id=GROUP, message_id=10)) == tm.CANT_DELETE
    assert client.delete_message(chat_id=GROUP, message_id=11)
    assert _error(lambda: client.delete_message(chat_id=GROUP, message_id=11)) == (
        tm.DELETE_NOT_FOUND
    )
    assert client.delete_messages(chat_id=GROUP, message_ids=[11, 12, 13])  # 11 is skipped
    assert fake.calls_to("deleteMessages")[0].params["message_ids"] == [11, 12, 13]
    with pytest.raises(ValueError, match="1-100"):
        client.delete_messages(chat_id=GROUP, message_ids=list(range(101)))
    assert _error(lambda: client.call("deleteMessages", chat_id=GROUP, message_ids=[])) == (
        tm.NO_IDS
    )
    assert (
        _error(lambda: client.call("deleteMessages", chat_id=GROUP, message_ids=list(range(101))))
        == tm.TOO_MANY_IDS
    )
    # The bot's own messages need no right.
    fake.set_chat_member(GROUP, BOT_ID, "member", is_bot=True)
    sent = client.send_message(chat_id=GROUP, text="hi")
    assert client.delete_message(chat_id=GROUP, message_id=sent["message_id"])


def test_params_are_validated_against_the_spec(client: TelegramClient) -> None:
    assert "user_id" in _error(lambda: client.call("banChatMember", chat_id=GROUP))


def test_invite_links_fit_the_spec_and_follow_telegrams_rules(
    fake: FakeTelegram, client: TelegramClient
) -> None:
    _describe(fake, bot_rights={"can_invite_users": True})
    until = int(time.time()) + 900
    link = client.create_chat_invite_link(
        chat_id=GROUP, name="Anti-raid", creates_join_request=True, expire_date=until
    )
    assert fake.spec.check(link, ["ChatInviteLink"]) is None, link
    assert (link["creates_join_request"], link["expire_date"]) == (True, until)
    assert "limit" in _error(
        lambda: client.create_chat_invite_link(
            chat_id=GROUP, creates_join_request=True, member_limit=5
        )
    )
    revoked = client.revoke_chat_invite_link(chat_id=GROUP, invite_link=link["invite_link"])
    assert fake.spec.check(revoked, ["ChatInviteLink"]) is None and revoked["is_revoked"]
    assert fake.results.invite_links[link["invite_link"]]["is_revoked"]
    assert "EXPIRED" in _error(
        lambda: client.revoke_chat_invite_link(chat_id=GROUP, invite_link="https://t.me/+nope")
    )
    _describe(fake, bot_rights={"can_invite_users": False})
    assert "invite link" in _error(lambda: client.create_chat_invite_link(chat_id=GROUP))
