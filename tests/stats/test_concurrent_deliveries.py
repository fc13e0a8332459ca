"""Three web processes given the same deliveries at once, each in its own order (Telegram
re-delivering to whichever worker answers): every update is done once, on the one-step path
(``claim_or_finish``) and on the ordinary one (joins, commands, a counter at its trigger),
with real processes on the test database and a KV store they share.

Anti-flood is on with a low limit, so that a member's third message in a window takes the
ordinary way from inside the one step (its counter meets its trigger) while other processes
race for the same updates. Every cell ends equal to the test's ground truth, in the database
(today's adds through the processes' write-behind epochs, written on exit) and in the KV store
(the backfill rebuilds from it); each flood window's counter holds each of its member's
messages once, and the action is taken exactly once per window over the limit.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from moderation.flood import foresee_flood
from stats.backfill import backfill_run
from telegram_bot.state import KVStore
from telegram_bot.updates import parse_update
from tests.fakes.telegram import FakeTelegramServer
from tests.stats.conftest import anti_flood
from tests.stats.conversation import Conversation, configure_rules
from tests.stats.test_crash import ROOT, child_env, shared
from tests.stats.truth import assert_rows, db_rows, truth_rows

__all__ = ["shared"]  # the fixture, used by name below
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
PROCESSES = 3
FLOOD_MESSAGES = 2  # anti_flood's limit


def deliver_at_once(
    store: KVStore, base_url: str, batches: list[list[dict[str, Any]]]
) -> list[tuple[int, str]]:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.stats.crash_child"],
            cwd=ROOT,
            env=child_env(store, base_url, None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in batches
    ]
    for child, batch in zip(children, batches, strict=True):
        assert child.stdin is not None
        child.stdin.write(json.dumps(batch))
        child.stdin.close()  # each starts on its batch at once, not after the previous one
    answered: list[tuple[int, str]] = []
    for child in children:
        assert child.stdout is not None and child.stderr is not None
        out, err = child.stdout.read(), child.stderr.read()
        assert child.wait(timeout=180) == 0, err
        answered += [(int(line.split()[0]), line.split()[1]) for line in out.splitlines()]
    return answered


def test_processes_racing_for_the_same_deliveries_count_each_update_once(
    shared: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=1), today]
    configure_rules()
    conversation = Conversation(seed=41, days=days, now=int(time.time()), messages=120)
    anti_flood(fake_telegram, conversation.chats, seconds=300)
    updates = conversation.updates
    rng = random.Random(41)
    batches = [conversation.joins + rng.sample(conversation.body, len(conversation.body))]
    batches += [rng.sample(updates, len(updates)) for _ in range(PROCESSES - 1)]

    # The joins are delivered before the race, as Telegram sends a member's join before their
    # messages: a link counts as a new member's only once the join is recorded, and a message
    # handled before it would differ from the truth by that rule, not by a double or lost
    # count. In the race they come again, as re-deliveries.
    answered = deliver_at_once(shared, fake_telegram.base_url, [conversation.joins])
    answered += deliver_at_once(shared, fake_telegram.base_url, batches)

    outcomes: dict[int, Counter[str]] = {}
    for update_id, outcome in answered:
        outcomes.setdefault(update_id, Counter())[outcome] += 1
    assert set(outcomes) == {update["update_id"] for update in updates}
    for update_id, seen in outcomes.items():
        if "ignored" in seen:  # not for the bot (an edit, another bot's command): never marked
            assert set(seen) == {"ignored"}, (update_id, seen)
            continue
        handled = seen["processed"] + seen["refused"]
        update = next(u for u in updates if u["update_id"] == update_id)
        assert handled == 1 and set(seen) <= {"processed", "refused", "duplicate"}, (seen, update)
    assert_rows(db_rows(), truth_rows(conversation.truth))  # the epochs were written on exit

    members: Counter[tuple[int, int]] = Counter()  # the members' messages, each counted once
    for update in {u["update_id"]: parse_update(u) for u in updates}.values():
        observed = update.chat_type in ("group", "supergroup") and update.command() is None
        if observed and foresee_flood(update, shared).counters and update.chat_id is not None:
            members[(update.chat_id, update.user_id or 0)] += 1
    windows: Counter[tuple[int, int]] = Counter()
    over = 0
    for key in shared.scan_all("mod:fl:"):
        _, _, chat_id, user_id, _window = key.split(":")
        value = shared.get(key)
        windows[(int(chat_id), int(user_id))] += value
        over += value > FLOOD_MESSAGES
    assert windows == members
    assert over > 0  # the trigger was met, so the ordinary path ran too
    assert len(fake_telegram.calls_to("restrictChatMember")) == over  # once per window over

    tomorrow = today + timedelta(days=1)  # rebuilt from the KV store alone: the same
    assert backfill_run(force=True, today=tomorrow).outcome == "done"
    assert_rows(db_rows(), truth_rows(conversation.truth))
