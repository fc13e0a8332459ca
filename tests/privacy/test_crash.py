"""An erasure killed half-way (a real process, SIGKILL) and run again completes: no trace of
the member, chat totals unchanged, one audit entry, no run state left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from telegram_bot.audit import Actor
from telegram_bot.models import AuditEntry
from telegram_bot.privacy import ERASE_ACTION, RUN_PREFIX, erase_user
from telegram_bot.state import KVStore
from tests.content.test_processes import database_url
from tests.privacy.seed import USER, chat_totals, kv_totals, seed, traces

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.mark.parametrize("stop", ["after_day", "mid_day"])
def test_an_erasure_killed_half_way_completes_when_run_again(
    store: KVStore, settings: Any, stop: str
) -> None:
    seed(store)
    totals, kv_before = chat_totals(), kv_totals(store)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings_test",
        DJANGO_SECRET_KEY=settings.SECRET_KEY,  # the run's name is an HMAC with it
        DATABASE_URL=database_url(),
        PRIVACY_CHILD_KV_URL=store.url,
        PRIVACY_CHILD_KV_PREFIX=store.prefix,
        PRIVACY_CHILD_STOP=stop,
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.privacy.erase_child", str(USER)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line == "stopped", child.stderr.read() if child.stderr else ""
        assert traces(store)  # half-way: the member is still there
    finally:
        child.kill()
        child.wait(timeout=30)

    erase_user(USER, actor=Actor(None, "operator"), source="admin")

    assert traces(store) == {}
    assert chat_totals() == totals
    assert kv_totals(store) == kv_before
    assert AuditEntry.objects.filter(action=ERASE_ACTION).count() == 1
    assert list(store.scan_all(RUN_PREFIX)) == []
