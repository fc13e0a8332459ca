"""Helpers of the broadcasts tests."""

from __future__ import annotations

from typing import Any

from broadcasts import services
from broadcasts.models import Broadcast, BroadcastStatus, Subscriber
from tests.factories import BroadcastFactory, SubscriberFactory
from tests.fakes.telegram import FakeTelegramServer


def subscribe(*user_ids: int, language: str = "en") -> None:
    """Subscribers in one insert (thousands, for the kill tests): the factory's objects,
    built, then saved together."""
    Subscriber.objects.bulk_create(
        [SubscriberFactory.build(user_id=uid, language=language) for uid in user_ids]
    )


def make_broadcast(text: str = "News!", **fields: Any) -> Broadcast:
    broadcast: Broadcast = BroadcastFactory(text=text, **fields)
    return broadcast


def start_now(broadcast: Broadcast) -> Broadcast:
    """Preview (to the owner), then start: what the console's two actions do."""
    services.broadcast_preview(broadcast_id=broadcast.pk)
    services.broadcast_start(broadcast_id=broadcast.pk)
    broadcast.refresh_from_db()
    assert broadcast.status == BroadcastStatus.SCHEDULED
    return broadcast


def deliveries(bot: FakeTelegramServer, text: str) -> dict[int, int]:
    """How many times each chat got ``text`` (accepted sends only)."""
    counts: dict[int, int] = {}
    for call in bot.calls:
        if call.failed or call.method not in (
            "sendMessage",
            "sendPhoto",
            "sendVideo",
            "sendDocument",
        ):
            continue
        if call.params.get("text", call.params.get("caption")) == text:
            chat = int(call.params["chat_id"])
            counts[chat] = counts.get(chat, 0) + 1
    return counts
