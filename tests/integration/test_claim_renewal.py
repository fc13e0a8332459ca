"""A handler slower than the claim's TTL keeps its update: the heartbeat renews the claim, so a
re-delivery meanwhile is answered in_progress. The test failed on the code before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.telegram import FakeTelegramServer


# --- (6) the update claim is not kept alive for a slow handler -------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_handler_slower_than_the_claim_ttl_is_not_run_twice_at_once(
    bot: FakeTelegramServer, settings: Any
) -> None:
    """A handler waits on a slow Telegram longer than UPDATE_CLAIM_TTL_SECONDS (90 s; here
    2 s). Its process is alive and beating, but the claim's TTL is never extended: Telegram's
    re-delivery (it re-sends after 60 s without an answer) claims the update and runs it a
    second time while the first run is still going. It must be answered in_progress."""
    import threading
    import time

    from telegram_bot.pipeline import liveness
    from telegram_bot.pipeline.process import Outcome, process_update
    from tests.builders import make_message_update

    settings.UPDATE_CLAIM_TTL_SECONDS = 2
    # A heartbeat started by an earlier test waits its 90 s claim's interval (3.3 s) before
    # it reads the setting again: this test's claims start a fresh one.
    liveness.current().stop()
    chat = 4322
    update = make_message_update("/start", chat_id=chat, user_id=chat)
    bot.delay_next("sendMessage", 3.5)  # the first run's reply waits on a slow Telegram
    first: list[Outcome] = []
    runner = threading.Thread(target=lambda: first.append(process_update(update)))
    runner.start()
    time.sleep(2.6)  # past the claim's TTL, the first run still waiting
    second = process_update(update)
    runner.join(10)
    assert first == [Outcome.PROCESSED]
    assert second == Outcome.IN_PROGRESS, f"the re-delivery ran the update again: {second}"
    assert len(bot.calls_to("sendMessage")) == 1
