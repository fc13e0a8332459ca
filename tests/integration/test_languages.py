# ruff: noqa: RUF001 - Russian texts have Cyrillic letters that look like Latin ones
"""The bot answers in the user's language (Telegram's ``language_code``), else the chat's
(``ChatPreference``), else ``LANGUAGE_CODE``; texts sent later reach the recipient in theirs;
the admin site follows the browser. End to end through the webhook and the fake Bot API."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from support.models import Ticket
from telegram_bot import languages
from telegram_bot.models import ChatPreference
from telegram_bot.pipeline import process
from telegram_bot.pipeline.process import process_update
from telegram_bot.state import get_store
from tests.builders import make_message_update
from tests.community.members_helpers import GROUP as MEMBERS_GROUP
from tests.community.members_helpers import join_update, make_policy, processed, sent_to
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, answers, command, describe_group, member_message
from tests.support.helpers import USER, last_message_id, message, reply_to, texts

pytestmark = pytest.mark.django_db


def speaking(update: dict[str, Any], code: str | None) -> dict[str, Any]:
    """``update`` with its sender's ``language_code`` set to ``code`` (removed for None)."""
    for part in ("message", "callback_query", "chat_member", "chat_join_request"):
        if part in update:
            users = [update[part]["from"]]
            if part == "chat_member":
                users.append(update[part]["new_chat_member"]["user"])
            for user in users:
                user.pop("language_code", None)
                if code is not None:
                    user["language_code"] = code
    return update


@pytest.mark.parametrize(
    ("code", "greeting"),
    [
        ("ru", "Здравствуйте! Я помогаю этому сообществу"),
        ("ru-RU", "Здравствуйте! Я помогаю этому сообществу"),
        ("en", "Hello! I run this community"),
        ("en-GB", "Hello! I run this community"),
        ("uk", "Hello! I run this community"),  # not a site language: the default
        (None, "Hello! I run this community"),
    ],
)
def test_start_answers_in_the_users_language(
    bot: FakeTelegramServer, post_update: Any, code: str | None, greeting: str
) -> None:
    post_update(speaking(message("/start"), code))
    [text] = texts(bot, USER)
    assert text.startswith(greeting)


def test_the_default_language_is_the_setting(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    settings.LANGUAGE_CODE = "ru"
    post_update(speaking(message("/start"), "uk"))
    assert texts(bot, USER)[0].startswith("Здравствуйте!")


def test_a_support_reply_reaches_the_user_in_the_users_language(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The admin writes in English; the Russian user reads the ticket mark in Russian, the
    admin reads the report in English."""
    post_update(speaking(message("/support заказ не пришёл"), "ru"))
    assert texts(bot, USER)[-1].startswith("Обращение #1 открыто. Поддержка ответит здесь.")
    notice = last_message_id(bot, OWNER_ID, "#1")
    assert texts(bot, OWNER_ID)[-1].startswith("New ticket #1 from")  # the admin: default
    post_update(speaking(reply_to(notice, "It ships tomorrow.", user_id=OWNER_ID), "en"))
    assert texts(bot, USER)[-1] == "Поддержка · обращение #1\n\nIt ships tomorrow."
    assert texts(bot, OWNER_ID)[-1] == "Sent to the user of ticket #1."


def test_an_admin_reads_notices_in_their_own_language(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    """The owner wrote to the bot in Russian once: the notice of an English user's ticket,
    sent while handling that user's update, is in Russian for the owner."""
    post_update(speaking(message("/start", user_id=OWNER_ID), "ru"))
    post_update(speaking(message("/support where is my order"), "en"))
    assert texts(bot, USER)[-1].startswith("Ticket #1 opened.")
    notice = texts(bot, OWNER_ID)[-1]
    assert notice.startswith("Новое обращение #1 от")
    [markup] = [
        call.params["reply_markup"]
        for call in bot.calls_to("sendMessage")
        if call.params["chat_id"] == OWNER_ID and "reply_markup" in call.params
    ]
    labels = [button["text"] for row in markup["inline_keyboard"] for button in row]
    assert labels == ["Ответить", "Решено"]


def test_a_reply_from_the_admin_site_is_in_the_users_language(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    post_update(speaking(message("/support посылка потерялась"), "ru"))
    ticket = Ticket.objects.get()
    page = admin_client.get(f"/admin/support/ticket/{ticket.pk}/change/").content.decode()
    token = page.split('id="reply-form"', 1)[1].split('name="form_token" value="', 1)[1][:36]
    response = admin_client.post(
        f"/admin/support/ticket/{ticket.pk}/reply/",
        {"text": "Nous la cherchons.", "form_token": token},
        follow=True,
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert "Reply sent to the user of ticket #1." in response.content.decode()
    assert texts(bot, USER)[-1] == "Поддержка · обращение #1\n\nNous la cherchons."


def test_a_moderation_warning_in_russian_and_in_english(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    process_update(speaking(command("/warn spam", reply_to=member_message()), "ru"))
    process_update(speaking(command("/warn", reply_to=member_message()), "en"))
    assert answers(bot) == [
        "Mallory получает предупреждение (1/3): spam",
        "Mallory is warned (2/3).",
    ]


def test_a_user_without_a_language_gets_the_chats(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    ChatPreference.objects.create(chat_id=GROUP, language="ru")
    process_update(speaking(command("/warn", reply_to=member_message()), None))
    # A user's own language wins over the chat's.
    process_update(speaking(command("/warn", reply_to=member_message()), "en"))
    assert answers(bot) == ["Mallory получает предупреждение (1/3).", "Mallory is warned (2/3)."]


def test_a_changed_chat_language_is_seen_at_once(bot: FakeTelegramServer) -> None:
    describe_group(bot)
    preference = ChatPreference.objects.create(chat_id=GROUP, language="ru")
    process_update(speaking(command("/warns", reply_to=member_message()), None))
    preference.language = ""
    preference.save()
    process_update(speaking(command("/warns", reply_to=member_message()), None))
    assert answers(bot) == ["У Mallory нет предупреждений.", "Mallory has no warnings."]


@pytest.mark.parametrize("one_step", [True, False], ids=["one step", "ordinary path"])
def test_group_messages_do_not_look_the_chat_language_up_each_time(
    bot: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch, one_step: bool
) -> None:
    if not one_step:  # as when an observer may act: the units run in the chat's language
        monkeypatch.setattr(process, "_finish_foreseen", lambda *args: None)
    ChatPreference.objects.create(chat_id=GROUP, language="ru")
    with CaptureQueriesContext(connection) as queries:
        for number in range(5):
            update = make_message_update(f"hello {number}", chat_id=GROUP, user_id=7000 + number)
            process_update(speaking(update, None))
    lookups = [q for q in queries.captured_queries if "chatpreference" in q["sql"].lower()]
    # Once, then from the cache; none at all when the update is done in one step (it says
    # nothing, so it needs no language).
    assert len(lookups) == (0 if one_step else 1)


def test_the_captcha_is_in_the_new_members_language(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    make_policy(captcha_enabled=True, captcha_seconds=120)
    assert processed(post_update, speaking(join_update(3001), "ru")) == "processed"
    assert processed(post_update, speaking(join_update(3002, first_name="Bob"), "en")) == (
        "processed"
    )
    russian, english = sent_to(bot, MEMBERS_GROUP)
    assert "добро пожаловать! Чтобы писать здесь, нажмите" in russian
    assert "в течение 120 секунд" in russian
    assert "welcome! To write here, press" in english and "within 120 seconds" in english


def test_the_admin_site_follows_the_browser(admin_client: Client) -> None:
    russian = admin_client.get("/admin/dead-letters/", HTTP_ACCEPT_LANGUAGE="ru").content
    english = admin_client.get("/admin/dead-letters/", HTTP_ACCEPT_LANGUAGE="en").content
    assert "Необработанных обновлений нет." in russian.decode()
    assert "Администрирование бота сообщества" in russian.decode()
    assert "No dead letters." in english.decode()
    assert "Community bot administration" in english.decode()


@pytest.mark.parametrize("url", ["/admin/dead-letters/", "/admin/stats/", "/admin/privacy/export/"])
def test_the_projects_own_admin_pages_carry_the_sites_title(admin_client: Client, url: str) -> None:
    """The operations pages' browser tab names the site, as the admin's own pages do, not
    Django's default title."""
    russian = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    english = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "| Бот сообщества</title>" in russian.replace("\n", "")
    assert "| Community bot</title>" in english.replace("\n", "")
    assert "Django" not in russian.split("</title>")[0]


def test_a_russian_operator_reads_the_admin_pages_in_russian(admin_client: Client) -> None:
    """The index's app lists, a changelist's columns, filters and values, and a change form's
    fieldsets, labels, choices and help texts: the names of the project's models and fields."""
    Ticket.objects.create(
        bot_id=1, number=7, user_id=USER, chat_id=USER, subject="Refund", opened_update_id=1
    )

    def page(url: str, language: str) -> str:
        response = admin_client.get(url, HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 200, url
        return response.content.decode()

    index = page("/admin/", "ru")
    for name in (
        "Сообщество и участники",
        "Журнал аудита",
        "Задания",
        "Обращения",
        "Правила заявок на вступление",
        "Настройки участников",
        "Посты",
        "Настройки модерации чата",
        "Правила нарушений",
    ):
        assert name in index, name
    for name in ("Audit log", "Join-request policies", "Chat moderation settings", "Posts"):
        assert name not in index, name
    assert "Join-request policies" in page("/admin/", "en")

    tickets = page("/admin/support/ticket/", "ru")
    for text in ("Тема", "Статус", "Исполнитель", "возраст", "меньше суток", "открыто"):
        assert text in tickets, text
    assert "Subject" not in tickets and "under a day" not in tickets

    policy = page("/admin/community/chatpolicy/add/", "ru")
    for text in (
        "Добавить правило заявок на вступление",
        "Вопрос",
        "Режим",
        "Вручную: решают администраторы",
        "Подпись для операторов.",
        "От 30s до 5m (Telegram разрешает личное сообщение",
    ):
        assert text in policy, text
    assert "Manual: the admins decide" not in policy

    settings = page("/admin/moderation/chatsettings/add/", "ru")
    assert "Лимит предупреждений" in settings and "Антифлуд" in settings
    assert "от 30s до 366d" in settings  # durations in units (telegram_bot/ops/durations.py)


@pytest.mark.parametrize(
    ("code", "language"),
    [("ru", "ru"), ("RU", "ru"), ("ru-RU", "ru"), ("ru_RU", "ru"), ("en-US", "en"), ("uk", None)],
)
def test_supported(code: str, language: str | None) -> None:
    assert languages.supported(code) == language


def test_texts_sent_later_use_the_language_the_user_last_wrote_with(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    store = get_store()
    assert languages.recipient_language(store, user_id=USER) == "en"
    post_update(speaking(message("/help"), "ru"))
    assert languages.recipient_language(store, user_id=USER) == "ru"
    post_update(speaking(message("/help"), "en-US"))
    assert languages.recipient_language(store, user_id=USER) == "en"


def test_a_group_upgraded_to_a_supergroup_speaks_its_language_at_once() -> None:
    """The move is a QuerySet.update (no signal): the process that made it drops its cached
    language of the new id (read before the move: the default)."""
    from telegram_bot.chat_migration import migrate_chat

    ChatPreference.objects.create(chat_id=-4002, language="ru")
    assert languages.chat_language(-1004002) == "en"  # cached: no row yet
    migrate_chat(-4002, -1004002)
    assert languages.chat_language(-1004002) == "ru"


def test_the_remembered_language_is_rewritten_within_a_minute_after_another_worker_changed_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Worker A stored "ru"; worker B then "en" (the user's other device); the user writes in
    Russian to A again: A's note is trusted for REWRITE_SECONDS only (it was a day, so texts
    sent later went out in English all day)."""
    from telegram_bot.updates import parse_update

    clock = [1000.0]
    monkeypatch.setattr(languages.time, "monotonic", lambda: clock[0])
    store = get_store()

    def private_in(code: str) -> Any:
        data = make_message_update("/help", chat_id=4343, user_id=4343)
        data["message"]["from"]["language_code"] = code
        return parse_update(data)

    languages.for_update(store, private_in("ru"))  # worker A remembers "ru"
    store.set("lang:4343", "en", 60_000)  # worker B's note
    clock[0] += languages.REWRITE_SECONDS + 1
    languages.for_update(store, private_in("ru"))
    assert languages.recipient_language(store, user_id=4343) == "ru"
