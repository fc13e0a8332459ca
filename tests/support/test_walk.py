"""The walk of ``/support <text>``: from the support handler to the admin's notification, in
stops (``tests/support/walk.py``). ARCHITECTURE.md (Support) has the measured figures; run
with ``-s`` to print the walk."""

from __future__ import annotations

from typing import Any

from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, message, sent
from tests.support.walk import Walk, telegram_call

# Issue 38: the walk was 58 stops with 9 climbs back; the flat desk must stay under 25.
MOST_STOPS = 24


def test_support_walk_to_the_admins_notice_is_short(
    bot: FakeTelegramServer, post_update: Any
) -> None:
    post_update(message("/support warming up", user_id=USER + 1))  # caches, lazy imports
    walk = Walk(marker=telegram_call("sendMessage", OWNER_ID))
    with walk:
        response = post_update(message("/support My invoice is wrong"))
    assert response["X-Update-Outcome"] == "processed"
    assert len(sent(bot, chat_id=OWNER_ID)) == 2
    assert walk.marked is not None, "the admin's notice was not sent in the traced update"
    whole = walk.stops[: walk.marked]
    support = walk.within("support.")
    to_notice = support[: len(support) - (len(walk.stops) - walk.marked)]
    desk = Walk.touching(to_notice, "support.")
    print(f"\nwhole update, to the admin's notice: {Walk.describe(whole).splitlines()[0]}")
    print(f"support handler to the admin's notice: {Walk.describe(to_notice)}")
    print(f"the same, the support desk's own stops: {Walk.describe(desk)}")
    assert len(desk) <= MOST_STOPS, Walk.describe(desk)
