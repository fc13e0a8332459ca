"""Channel statistics: the reaction counts Telegram reports (message_reaction_count, which the
bot now asks for) are recorded on the published post, a newer count over an older one and a
re-delivered one changing nothing; views are said plainly to be unavailable from the Bot API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from content.models import Post
from content.publishing import post_publish_now
from telegram_bot.pipeline.router import get_router
from tests.builders import next_update_id
from tests.content.conftest import make_post
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
SPEC = Path(__file__).parents[1] / "fakes" / "botapi" / "api.json"


def reaction_update(post: Post, counts: dict[str, int], *, date: int) -> dict[str, Any]:
    chat = {"id": -1001234567890, "type": "channel", "title": "News", "username": "news_channel"}
    return {
        "update_id": next_update_id(),
        "message_reaction_count": {
            "chat": chat,
            "message_id": post.channel_message_id,
            "date": date,
            "reactions": [
                {"type": {"type": "emoji", "emoji": emoji}, "total_count": count}
                for emoji, count in counts.items()
            ],
        },
    }


def missing_required(update: dict[str, Any]) -> list[str]:
    """Required fields of the Bot API 10.1 objects the update is made of that it lacks."""
    with open(SPEC) as file:
        types = json.load(file)["types"]

    def required(name: str) -> set[str]:
        return {f["name"] for f in types[name]["fields"] if f["required"]}

    counts = update["message_reaction_count"]
    missing = required("MessageReactionCountUpdated") - set(counts)
    for item in counts["reactions"]:
        missing |= required("ReactionCount") - set(item)
        missing |= required("ReactionTypeEmoji") - set(item["type"])
    return sorted(missing)


def test_reaction_counts_are_recorded_on_the_post(
    bot: FakeTelegramServer, post_update: Any, admin_client: Client
) -> None:
    assert "message_reaction_count" in get_router().allowed_updates
    post = post_publish_now(post_id=make_post("Liked").pk)
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert "Views: not available from the Bot API." in page
    assert "Reactions: none reported yet" in page
    first = reaction_update(post, {"👍": 3, "🔥": 5}, date=1_800_000_000)
    assert missing_required(first) == []
    assert post_update(first).status_code == 200
    post.refresh_from_db()
    assert post.reactions == [{"reaction": "🔥", "count": 5}, {"reaction": "👍", "count": 3}]
    assert post.reactions_date == datetime.fromtimestamp(1_800_000_000, tz=UTC)
    post_update(reaction_update(post, {"👍": 4}, date=1_800_000_060))
    post_update(reaction_update(post, {"👍": 1}, date=1_800_000_030))  # older: ignored
    post.refresh_from_db()
    assert post.reactions == [{"reaction": "👍", "count": 4}]
    page = admin_client.get(f"/admin/content/post/{post.pk}/change/").content.decode()
    assert "Reactions: 👍 4" in page
    assert not bot.calls_to("sendMessage")[1:]  # nothing answered


def test_counts_of_a_message_that_is_no_post_change_nothing(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post = post_publish_now(post_id=make_post("Other").pk)
    update = reaction_update(post, {"👍": 2}, date=1_800_000_000)
    update["message_reaction_count"]["message_id"] = 999
    assert post_update(update).status_code == 200
    malformed = reaction_update(post, {"👍": 2}, date=1_800_000_000)
    del malformed["message_reaction_count"]["reactions"][0]["total_count"]
    assert post_update(malformed).status_code == 200
    post.refresh_from_db()
    assert post.reactions == []
