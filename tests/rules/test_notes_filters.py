"""Notes and filters (#40 items 3 and 4) through the webhook: /save, #name, /get, /notes,
/clear with placeholders, buttons and admin-only notes; /filter, /stop, /filters answered once
per message and at most FILTER_REPLIES_PER_MINUTE times a minute per chat."""

from __future__ import annotations

from typing import Any

import pytest

from moderation.rules import answers as answers_module
from moderation.rules.models import Filter, Note
from telegram_bot.models import AuditEntry
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, answers, describe_group, ok_calls
from tests.rules.helpers import command, said, send

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def group(bot: FakeTelegramServer) -> FakeTelegramServer:
    describe_group(bot)
    return bot


def test_save_a_note_with_placeholders_and_buttons_and_get_it(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    command(post_update, "/save rules Be kind, {first}.\n[Site](buttonurl://https://example.org)")
    assert answers(bot)[-1] == "Saved #rules."
    assert AuditEntry.objects.filter(action="rules.note").count() == 1
    send(post_update, said("#rules please"))
    call = ok_calls(bot, "sendMessage")[-1]
    assert call.params["text"] == "Be kind, Mallory."
    assert call.params["reply_markup"] == {
        "inline_keyboard": [[{"text": "Site", "url": "https://example.org"}]]
    }
    command(post_update, "/save welcome Hi {first} of {chatname}. {rules}")
    command(post_update, "/get welcome", sender=MEMBER)
    assert answers(bot)[-1] == "Hi Test of Test group. Be kind, {first}."
    command(post_update, "/notes", sender=MEMBER)
    assert answers(bot)[-1] == "Notes: #rules, #welcome"


def test_admin_only_notes_and_clear(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/save secret {admin} the mod channel is @mods")
    assert Note.objects.get().admin_only
    before = len(answers(bot))
    send(post_update, said("#secret"))
    assert len(answers(bot)) == before  # not for members
    command(post_update, "/get secret")
    assert answers(bot)[-1] == "the mod channel is @mods"
    command(post_update, "/clear secret")
    assert answers(bot)[-1] == "Removed #secret."
    command(post_update, "/get secret", sender=MEMBER)
    assert answers(bot)[-1] == "There is no note #secret."


def test_a_note_of_a_replied_photo(bot: FakeTelegramServer, post_update: Any) -> None:
    photo = said(None, photo=[{"file_id": "p1", "file_unique_id": "u1", "width": 1, "height": 1}])
    photo["caption"] = "our logo"
    command(post_update, "/save logo", reply_to_message=photo)
    send(post_update, said("#logo"))
    [sent] = ok_calls(bot, "sendPhoto")
    assert (sent.params["photo"], sent.params["caption"]) == ("p1", "our logo")


def test_a_filter_answers_once_per_message(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, '/filter "hello there" General Kenobi!')
    assert Filter.objects.get().keyword == "hello there"
    message = said("Hello THERE, hello there")
    send(post_update, message)
    call = ok_calls(bot, "sendMessage")[-1]
    assert call.params["text"] == "General Kenobi!"
    assert call.params["reply_parameters"]["message_id"] == message["message_id"]
    sent = len(ok_calls(bot, "sendMessage"))
    send(post_update, said("there, hello: no phrase"))
    assert len(ok_calls(bot, "sendMessage")) == sent
    command(post_update, "/filters", sender=MEMBER)
    assert answers(bot)[-1] == "Filters: hello there"
    command(post_update, "/stop hello there")
    assert answers(bot)[-1] == "Stopped the filter hello there."
    assert not Filter.objects.exists()


def test_filter_answers_per_minute_are_limited(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers_module, "FILTER_REPLIES_PER_MINUTE", 2)
    command(post_update, "/filter ping pong")
    sent = len(ok_calls(bot, "sendMessage"))
    for _ in range(4):
        send(post_update, said("ping"))
    assert len(ok_calls(bot, "sendMessage")) - sent == 2


def test_bad_arguments_and_rights(bot: FakeTelegramServer, post_update: Any) -> None:
    command(post_update, "/save")
    command(post_update, "/save b@d text")
    command(post_update, "/save empty")
    command(post_update, "/filter")
    command(post_update, "/save rules text", sender=MEMBER)
    assert answers(bot) == [
        "Say the note's name and its text: /save rules Be kind.",
        "b@d is not a note name: letters, digits, - and _.",
        "Give the note's text, or reply to a message to save it.",
        'Say the keyword and the answer: /filter "hello there" Hi!',
        "Only the chat's admins can do that.",
    ]
    assert not Note.objects.filter(chat_id=GROUP).exists()
