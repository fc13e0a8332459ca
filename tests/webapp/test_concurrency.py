"""Two requests at the same moment: one initData posted twice opens one session; one member
action posted twice (a double tap) warns once. Real concurrent requests through Django's
handler, on each KV backend available (Redis only when REDIS_URL is set), on the database the
suite runs on (SQLite, or PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from moderation.models import Warning
from telegram_bot.state import KVStore, override_store
from tests.conftest import make_store
from tests.fakes.telegram import FakeTelegramServer
from tests.webapp.helpers import GROUP, MEMBER, MODERATOR, describe_groups, init_data, login


@pytest.fixture(params=["memory", "db", "redis"])
def store(request: pytest.FixtureRequest, bot: FakeTelegramServer) -> Iterator[KVStore]:
    for shared in make_store(request, request.param):
        with override_store(shared):
            yield shared


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def work(n: int) -> None:
        try:
            barrier.wait()
            results[n] = calls[n]()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_one_initdata_posted_twice_at_once_opens_one_session(
    bot: FakeTelegramServer, store: KVStore, settings: Any
) -> None:
    describe_groups(bot)
    data = init_data(settings.TELEGRAM_BOT_TOKEN, MODERATOR)
    clients = [Client(), Client()]
    codes = at_once(
        [lambda c=c: c.post("/app/login/", {"init_data": data}).status_code for c in clients]
    )
    assert sorted(codes) == [200, 403]


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_a_double_tap_on_warn_warns_once(
    bot: FakeTelegramServer, store: KVStore, settings: Any
) -> None:
    describe_groups(bot)
    client = Client()
    assert login(client, settings.TELEGRAM_BOT_TOKEN, MODERATOR).status_code == 200
    page = client.get(f"/app/c/{GROUP}/members/{MEMBER}/").content.decode()
    once = page.split('name="once" value="')[1].split('"')[0]
    form = {"action": "warn", "reason": "spam", "once": once}
    url = f"/app/c/{GROUP}/members/{MEMBER}/"
    twins = [Client(), Client()]
    for twin in twins:
        twin.cookies = client.cookies
    codes = at_once([lambda t=t: t.post(url, form).status_code for t in twins])
    assert codes == [200, 200]
    assert Warning.objects.filter(chat_id=GROUP, user_id=MEMBER).count() == 1
