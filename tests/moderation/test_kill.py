"""kill -9 between Telegram's answer and the commit: the re-delivered /warn repeats at most
the (idempotent) restriction, never the warning (real processes, shared KV backends)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from typing import Any

import pytest
from django.db import connection

from moderation.models import Warning
from telegram_bot.models import AuditEntry
from telegram_bot.pipeline import liveness
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.state import KVStore, override_store
from tests.conftest import wire_bot
from tests.fakes.telegram import FakeTelegramServer
from tests.moderation.helpers import GROUP, MEMBER, command, describe_group, member_message


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_a_warning_killed_after_telegrams_answer_is_not_given_twice(
    shared_kv: KVStore, fake_telegram: FakeTelegramServer, settings: Any
) -> None:
    from tests.moderation.kill_worker import handle

    if connection.vendor == "sqlite":
        pytest.skip("the SQLite test database is not shared with a child process")
    wire_bot(settings, fake_telegram)
    settings.UPDATE_LIVENESS_TTL_SECONDS = 3
    describe_group(fake_telegram)
    target = member_message()
    with override_store(shared_kv):
        process_update(command("/warn one", reply_to=target))
        process_update(command("/warn two", reply_to=target))
    third = command("/warn three", reply_to=target)
    # Telegram applies the restriction, then its answer takes 60 s: the worker dies waiting.
    fake_telegram.delay_next("restrictChatMember", 60)
    db_name = connection.settings_dict["NAME"]
    ctx = multiprocessing.get_context("spawn")
    worker = ctx.Process(
        target=handle,
        args=(fake_telegram.base_url, shared_kv.url, shared_kv.prefix, db_name, third),
    )
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while not fake_telegram.calls_to("restrictChatMember") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake_telegram.calls_to("restrictChatMember"), "the worker never got that far"
        os.kill(worker.pid, signal.SIGKILL)  # type: ignore[arg-type]
        worker.join(timeout=30)
        assert worker.exitcode == -signal.SIGKILL
        assert fake_telegram.chat_member(GROUP, MEMBER)["status"] == "restricted"
        assert Warning.objects.filter(triggered=True).count() == 1  # committed before the call
        assert not AuditEntry.objects.filter(action="mute").exists()
        with override_store(shared_kv):
            outcome, started = Outcome.IN_PROGRESS, time.monotonic()
            while outcome == Outcome.IN_PROGRESS and time.monotonic() - started < 60:
                time.sleep(0.5)
                outcome = process_update(third)  # Telegram's re-delivery
    finally:
        if worker.is_alive():
            worker.kill()
            worker.join(timeout=30)
        # This process's heartbeat would keep writing live: rows into the shared store for
        # the claim TTL, into later tests' tables.
        liveness.current().stop()
    assert outcome == Outcome.PROCESSED
    assert Warning.objects.count() == 3
    assert len(fake_telegram.calls_to("restrictChatMember")) == 2  # the repeat, idempotent
    assert AuditEntry.objects.filter(action="mute").count() == 1
    assert AuditEntry.objects.filter(action="warn").count() == 3
