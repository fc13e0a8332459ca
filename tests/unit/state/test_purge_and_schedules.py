from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django_q.models import Schedule

from telegram_bot.scheduling import OWNED_PREFIX, declared_schedules, schedules_sync
from telegram_bot.state import open_store
from telegram_bot.state.models import KVEntry
from telegram_bot.tasks import kv_purge_expired


@pytest.mark.django_db
def test_the_purge_deletes_expired_rows_only() -> None:
    store = open_store("db://")
    for i in range(30):
        store.set(f"lock:old{i}", 1, ttl_ms=50)
    store.set("lock:live", 1, ttl_ms=60_000)
    store.set("lock:forever", 1)
    time.sleep(0.1)
    # Other tests' liveness heartbeats (their own connections, committed outside this test's
    # transaction) may leave live:<process> rows here that expire too, and their process-wide
    # stores the flags of the keys' format (#bot:<id>, #moved:<id>, which never expire).
    foreign = KVEntry.objects.filter(key__startswith="live:").count()
    assert 30 <= store.purge_expired(batch=7) <= 30 + foreign
    others = KVEntry.objects.exclude(key__startswith="live:").exclude(key__startswith="#")
    ours = set(others.values_list("key", flat=True))
    assert ours == {"lock:live", "lock:forever"}


@pytest.mark.django_db
def test_the_purge_task_uses_the_configured_store() -> None:
    from telegram_bot.state import override_store

    store = open_store("db://")
    store.set("rl:x", 1, ttl_ms=10)
    time.sleep(0.05)
    foreign = KVEntry.objects.filter(key__startswith="live:").count()  # see above
    with override_store(store):
        assert 1 <= kv_purge_expired() <= 1 + foreign
    assert not KVEntry.objects.filter(key="rl:x").exists()


@pytest.mark.django_db
def test_schedules_are_reconciled_by_name_idempotently() -> None:
    Schedule.objects.create(name=OWNED_PREFIX + "retired_job", func="x.y")
    Schedule.objects.create(name="operator's own", func="a.b")
    declared = sorted(spec.name for spec in declared_schedules())
    assert "kv_purge_expired" in declared
    first = schedules_sync()
    assert sorted(first["created"]) == declared
    assert first["deleted"] == ["retired_job"]
    row = Schedule.objects.get(name=OWNED_PREFIX + "kv_purge_expired")
    assert (row.func, row.minutes, row.repeats) == ("telegram_bot.tasks.kv_purge_expired", 10, -1)
    row.minutes = 99
    row.save()
    assert schedules_sync()["updated"] == ["kv_purge_expired"]
    assert sorted(schedules_sync()["unchanged"]) == declared
    assert Schedule.objects.filter(name="operator's own").exists()
    call_command("sync_schedules", verbosity=0)
    assert Schedule.objects.filter(name__startswith=OWNED_PREFIX).count() == len(declared)
