"""The live writer's write-behind (stats/write_behind.py) on PostgreSQL: a process's messages
are added to the database per epoch, in one transaction that holds their days' shared locks
across their KV commits. With real threads: an exclusive lock holder (the backfill, finalize,
the reconciliation) never sees an increment in the KV store that the database is still to get;
a day it holds is counted on the synchronous path without stopping the other days; a
duplicate or a failing commit adds nothing; an epoch whose connection dies poisons its rows,
which the backfill rebuilds; a process that exits writes its epoch first; an erasure waits
for the epoch that holds the member's add. The kill -9 of a
process with an epoch pending is in tests/stats/test_crash.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction

from stats import keys, write_behind
from stats.backfill import backfill_run
from stats.daylock import lock_days
from stats.live_writer import RowDelta, count_once
from stats.models import DailyUserStat
from stats.poison import poison_marks
from stats.privacy import erase
from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore, open_store
from tests.content.test_processes import database_url
from tests.locks import wait_until_waiting_for_a_lock

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the write-behind is PostgreSQL's"
    ),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(120),
]
ROOT = Path(__file__).resolve().parents[2]
CHAT = -100991
# Days of the epochs (today, the production case: the suite runs within one UTC day, see
# tests/midnight.py; and tomorrow), and a closed day.
DAY = datetime.now(UTC).date()
OTHER_DAY = DAY + timedelta(days=1)
CLOSED_DAY = DAY - timedelta(days=1)


@pytest.fixture
def store() -> KVStore:
    return open_store("memory://")


@pytest.fixture(autouse=True)
def _epochs(settings: Any) -> Iterator[None]:
    settings.STATS_WRITE_BEHIND_MS = 5
    yield
    write_behind.shutdown()


@pytest.fixture
def no_flusher(settings: Any) -> None:
    """Epochs end only when the test flushes them: what is still in one stays there."""
    settings.STATS_WRITE_BEHIND_MS = 600_000


def counter(day: date = DAY, user_id: int = 1) -> str:
    return keys.column_key("message_count", CHAT, day, user_id)


def kv_commit(store: KVStore, day: date, user_id: int, pause: float = 0.0) -> Callable[[], bool]:
    """A KV commit that takes ``pause`` seconds after its increment (the script's reply on its
    way back): the window in which an exclusive holder must not read the day."""

    def commit() -> bool:
        store.increment(counter(day, user_id))
        if pause:
            time.sleep(pause)
        return True

    return commit


def count_epoch_joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages joined an epoch (the rest were counted synchronously)."""
    joined = [0]
    original = write_behind.WriteBehind.join

    def join(self: write_behind.WriteBehind, keys: frozenset[int]) -> Any:
        epoch = original(self, keys)
        joined[0] += epoch is not None
        return epoch

    monkeypatch.setattr(write_behind.WriteBehind, "join", join)
    return joined


def row(day: date = DAY, user_id: int = 1) -> RowDelta:
    return RowDelta(CHAT, day, user_id, {"message_count": 1})


def stored(day: date = DAY, user_id: int = 1) -> int:
    found = DailyUserStat.objects.filter(chat_id=CHAT, day=day, user_id=user_id).first()
    return found.message_count if found else 0


def in_threads(count: int, target: Callable[[int], None]) -> tuple[list[threading.Thread], list]:
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            target(n)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads, errors


def test_an_exclusive_holder_never_sees_a_kv_increment_the_database_is_still_to_get(
    store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    sent = [0] * 4
    epochs = count_epoch_joins(monkeypatch)

    def send(n: int) -> None:
        while not stop.is_set():
            assert count_once(
                store=store, commit=kv_commit(store, DAY, n, 0.001), rows=[row(DAY, n)]
            )
            sent[n] += 1

    threads, errors = in_threads(4, send)
    looks = 0
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline or looks < 30:
            with transaction.atomic():
                lock_days([(CHAT, DAY)], shared=False)  # what the backfill does first
                for user_id in range(4):
                    kv = int(store.get(counter(DAY, user_id)) or 0)
                    assert stored(DAY, user_id) == kv, (user_id, looks)
            looks += 1
            time.sleep(0.002)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert not errors, errors
    write_behind.flush()
    assert [stored(DAY, n) for n in range(4)] == sent
    assert sum(sent) > 100
    assert epochs[0] > sum(sent) / 2  # most went through the epochs, not the synchronous path


def test_a_day_held_exclusively_is_counted_once_released_and_other_days_go_on(
    store: KVStore,
) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            lock_days([(CHAT, DAY)], shared=False)
            held.set()
            release.wait(30)

    holder, errors = in_threads(1, lambda _: hold())
    assert held.wait(10)
    waiting, more_errors = in_threads(
        1, lambda _: count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    )
    wait_until_waiting_for_a_lock(waiting[0])  # on the synchronous path, its own transaction
    # The other day is counted meanwhile, through the epochs.
    for _ in range(5):
        assert count_once(store=store, commit=kv_commit(store, OTHER_DAY, 1), rows=[row(OTHER_DAY)])
    write_behind.flush()
    assert stored(OTHER_DAY) == 5
    assert waiting[0].is_alive()  # the held day's message waits, on the synchronous path...
    assert store.get(counter(DAY)) is None  # ...before its KV commit
    release.set()
    for thread in holder + waiting:
        thread.join(30)
    assert not errors and not more_errors, errors + more_errors
    write_behind.flush()
    assert stored(DAY) == 1 and int(store.get(counter(DAY))) == 1


def test_a_duplicate_or_a_commit_that_raises_adds_nothing(store: KVStore) -> None:
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row()])
    assert not count_once(store=store, commit=lambda: False, rows=[row()])

    def fails() -> bool:
        raise RuntimeError("the KV store went away")

    with pytest.raises(RuntimeError):
        count_once(store=store, commit=fails, rows=[row()])
    write_behind.flush()
    assert stored() == 1
    # The epochs are not stuck: more messages are counted.
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row()])
    write_behind.flush()
    assert stored() == 2


def test_an_epoch_whose_connection_dies_poisons_its_rows_and_the_backfill_rebuilds_them(
    store: KVStore, settings: Any
) -> None:
    settings.STATS_WRITE_BEHIND_MS = 600_000  # the epoch stays open while its backend is killed
    settings.STATS_BACKFILL_CLOCK_SKEW_MS = 0
    for user_id in (1, 2, 2):
        assert count_once(
            store=store, commit=kv_commit(store, DAY, user_id), rows=[row(DAY, user_id)]
        )
    with connection.cursor() as cursor:  # the database drops the epoch's connection
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks "
            "WHERE locktype = 'advisory' AND pid <> pg_backend_pid() AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        assert cursor.fetchone() == (True,)
    write_behind.flush()
    assert stored(DAY, 1) == stored(DAY, 2) == 0  # the adds were lost with it...
    assert {(chat, day) for chat, day, _, _ in poison_marks(store)} == {(CHAT, DAY)}  # ...and said
    # The next messages are counted on a new connection.
    assert count_once(store=store, commit=kv_commit(store, DAY, 3), rows=[row(DAY, 3)])
    write_behind.flush()
    assert stored(DAY, 3) == 1
    time.sleep(0.01)  # the backfill's phases start after the poisoning
    run = backfill_run(owner="repair", force=True, store=store, today=DAY + timedelta(days=1))
    assert run.outcome == "done"
    assert [stored(DAY, n) for n in (1, 2, 3)] == [1, 2, 1]


EXITING_PROCESS = f"""
import sys
from datetime import date

import django

django.setup()
from stats import write_behind
from stats.live_writer import RowDelta, count_once
from telegram_bot.state import open_store

write_behind.WriteBehind._run = lambda self: None  # no flusher: only the exit writes them
store = open_store("memory://")
day = date.fromisoformat(sys.argv[1])
for _ in range(5):
    assert count_once(
        store=store, commit=lambda: True, rows=[RowDelta({CHAT}, day, 7, {{"message_count": 1}})]
    )
"""


def test_a_process_that_exits_writes_its_epoch_first() -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": database_url(),
        "STATS_WRITE_BEHIND_MS": "1000",
    }
    done = subprocess.run(
        [sys.executable, "-c", EXITING_PROCESS, DAY.isoformat()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert stored(DAY, 7) == 5


def test_an_erasure_moves_a_message_whose_add_was_still_in_the_epoch(
    store: KVStore, no_flusher: None
) -> None:
    """/forgetme right after a message: its add is in the epoch when the erasure starts. The
    erasure moves each day under the day's exclusive lock, so it waits for the epoch and moves
    the row; the member's id is left nowhere."""
    user, anonymous = 7, 2**52 + 7
    assert count_once(store=store, commit=kv_commit(store, DAY, user), rows=[row(DAY, user)])
    assert stored(DAY, user) == 0  # still in the epoch
    subject = Subject(user_id=user, anonymous_id=anonymous, marker_prefix="lock:erase:t:")
    moved: list[int] = []
    eraser, errors = in_threads(1, lambda _: moved.append(erase(subject, store)["days"]))
    wait_until_waiting_for_a_lock(eraser[0], "the erasure")
    write_behind.flush()  # the epoch ends: the erasure goes on
    eraser[0].join(30)
    assert not errors and moved == [1], errors
    assert not DailyUserStat.objects.filter(user_id=user).exists()
    assert stored(DAY, anonymous) == 1
    assert store.get(counter(DAY, user)) is None


def test_a_late_message_is_added_before_its_answer(store: KVStore, no_flusher: None) -> None:
    """A closed day's row fires the triggers that drop its totals: it goes one message per
    transaction, before the answer, never in an epoch (stats/write_behind.py)."""
    assert count_once(store=store, commit=kv_commit(store, CLOSED_DAY, 1), rows=[row(CLOSED_DAY)])
    assert stored(CLOSED_DAY) == 1  # no flush: already there
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    assert stored(DAY) == 0  # today's goes with the epoch
    write_behind.flush()
    assert stored(DAY) == 1


def until(condition: Callable[[], bool], seconds: float = 30) -> None:
    """A connection closed on our side ends its server process a moment later."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.02)


def advisory_locks_held() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
            "pid <> pg_backend_pid() AND database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return int(cursor.fetchone()[0])


def test_the_next_epoch_keeps_only_the_days_still_in_use(store: KVStore, settings: Any) -> None:
    """A day that got messages once is not locked by every epoch after it: a multi-day
    exclusive holder would wait for an epoch per day, and the lock table would fill."""
    settings.STATS_WRITE_BEHIND_MS = 600_000  # the test ends the epochs itself
    behind = write_behind.get()
    assert behind is not None
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    assert count_once(store=store, commit=kv_commit(store, OTHER_DAY, 1), rows=[row(OTHER_DAY)])
    behind.flush(reopen=True)  # the next epoch tries both days again
    assert advisory_locks_held() == 2
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    behind.flush(reopen=True)  # only DAY was used: OTHER_DAY is let go
    assert advisory_locks_held() == 1
    write_behind.flush()
    assert advisory_locks_held() == 0
    assert (stored(DAY), stored(OTHER_DAY)) == (2, 1)


def test_an_epoch_that_fails_unexpectedly_poisons_its_rows_and_the_next_goes_on(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, no_flusher: None
) -> None:
    from stats import live_writer

    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    original = live_writer.add_statements
    monkeypatch.setattr(live_writer, "add_statements", lambda merged: 1 / 0)
    write_behind.flush()
    assert {(chat, day) for chat, day, _, _ in poison_marks(store)} == {(CHAT, DAY)}
    until(lambda: advisory_locks_held() == 0)  # its transaction did not stay open
    monkeypatch.setattr(live_writer, "add_statements", original)
    assert count_once(store=store, commit=kv_commit(store, DAY, 2), rows=[row(DAY, 2)])
    write_behind.flush()
    assert (stored(DAY, 1), stored(DAY, 2)) == (0, 1)


def test_a_spare_connection_that_died_is_replaced_without_leaving_the_epochs(
    store: KVStore, no_flusher: None
) -> None:
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    write_behind.flush()  # its connection goes back to the spares, idle
    with connection.cursor() as cursor:  # the server restarts, say: the idle one is dropped
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> "
            "pg_backend_pid() AND datname = current_database() AND state = 'idle'"
        )
    time.sleep(0.1)
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    assert stored(DAY) == 1  # in the epoch (the synchronous path would have added it)
    write_behind.flush()
    assert stored(DAY) == 2


def test_no_epoch_starts_once_the_process_is_exiting(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, no_flusher: None
) -> None:
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    assert stored(DAY) == 0
    monkeypatch.setattr(write_behind, "_exited", False)
    write_behind.at_exit()  # writes the epoch...
    assert stored(DAY) == 1
    assert write_behind.get() is None  # ...and a message counted after it waits for its add
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    assert stored(DAY) == 2


def test_a_closed_write_behind_stops_its_flusher(store: KVStore, no_flusher: None) -> None:
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY)])
    behind = write_behind.get()
    assert behind is not None and behind._thread is not None
    flusher = behind._thread
    write_behind.shutdown()  # an interval of 600 s: it was asleep
    assert not flusher.is_alive()
    assert stored(DAY) == 1


# Python 3.12+ warns of exactly the case this test makes on purpose.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_counts_even_if_a_parent_thread_held_the_locks_at_the_fork() -> None:
    """A fork while the flusher (or a message) held the process's locks: the child starts
    with fresh ones and no epoch, instead of hanging on its first message."""
    from stats import live_writer

    held = [live_writer._memo_lock, write_behind._instance_lock]
    for lock in held:
        lock.acquire()
    try:
        pid = os.fork()
        if pid == 0:  # the child: no database, no pytest; a hang ends by the alarm
            signal.signal(signal.SIGALRM, signal.SIG_DFL)  # not pytest-timeout's handler
            signal.alarm(10)
            code = 1
            try:
                write_behind.get()
                live_writer.memo_remember([(CHAT, DAY, "messages")])
                code = 0
            finally:
                os._exit(code)
    finally:
        for lock in held:
            lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_an_epoch_whose_poisoning_fails_too_does_not_stop_the_next_one(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, no_flusher: None
) -> None:
    monkeypatch.setattr(write_behind.WriteBehind, "_run", lambda self: None)  # the test flushes
    behind = write_behind.get()
    assert behind is not None
    assert count_once(store=store, commit=kv_commit(store, DAY, 1), rows=[row(DAY, 1)])
    with behind._mutex:
        behind._retire_current()  # epoch A waits to be ended; B takes the next message
    assert count_once(store=store, commit=kv_commit(store, DAY, 2), rows=[row(DAY, 2)])
    finish, calls = behind._finish, []

    def finish_a_fails(epoch: Any) -> None:
        calls.append(epoch)
        if len(calls) == 1:
            raise RuntimeError("A cannot be written")
        finish(epoch)

    def poison_fails(epoch: Any, exc: Exception) -> None:
        raise RuntimeError("nor poisoned")

    monkeypatch.setattr(behind, "_finish", finish_a_fails)
    monkeypatch.setattr(behind, "_poison", poison_fails)
    behind.flush()
    assert len(calls) == 2 and (stored(DAY, 1), stored(DAY, 2)) == (0, 1)
    until(lambda: advisory_locks_held() == 0)  # A's transaction did not stay open either
