"""Jobs: claiming, leases, fencing, retries with the policy, failure notifications."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from telegram_bot.errors import TelegramApiError, TelegramRateLimitError
from telegram_bot.jobs import registry
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun, claim_due, run_due, run_job
from telegram_bot.jobs.services import (
    job_cancel,
    job_enqueue,
    job_retry_now,
    jobs_delete_finished,
)
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer

calls: list[tuple[str, dict[str, Any], int]] = []
failures: dict[str, list[BaseException]] = {}


def recording_job(payload: dict[str, Any], run: JobRun) -> None:
    calls.append((run.kind, payload, run.attempt))
    queue = failures.get(payload.get("name", ""), [])
    if queue:
        raise queue.pop(0)


@pytest.fixture(autouse=True)
def test_kinds() -> Iterator[None]:
    handlers = registry.job_handlers()
    handlers["test.record"] = recording_job
    calls.clear()
    failures.clear()
    yield
    handlers.pop("test.record", None)


def make_due(job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(next_attempt=timezone.now())


@pytest.mark.django_db
def test_a_due_job_runs_once_and_succeeds() -> None:
    job = job_enqueue("test.record", {"name": "a"})
    assert run_due("w1") == 1
    assert run_due("w1") == 0
    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner) == (JobStatus.SUCCEEDED, 1, "w1")
    assert calls == [("test.record", {"name": "a"}, 1)]


@pytest.mark.django_db
def test_a_job_is_not_run_before_its_time() -> None:
    job_enqueue("test.record", {"name": "later"}, run_at=timezone.now() + timedelta(hours=1))
    assert run_due("w1") == 0


@pytest.mark.django_db
def test_unknown_kinds_and_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown job kind"):
        job_enqueue("nope.nothing")
    with pytest.raises(ValueError, match="timezone-aware"):
        job_enqueue("test.record", run_at=timezone.now().replace(tzinfo=None))


@pytest.mark.django_db
def test_server_errors_retry_with_growing_delays_then_succeed(settings: Any) -> None:
    settings.JOB_RETRY_JITTER = 0
    settings.JOB_RETRY_BASE_DELAY = 10
    failures["flaky"] = [TelegramApiError("sendMessage", status=500, error_code=500)] * 2
    job = job_enqueue("test.record", {"name": "flaky"})
    waits = []
    for _ in range(3):
        before = timezone.now()
        run_due("w1")
        job.refresh_from_db()
        if job.status == JobStatus.QUEUED:
            waits.append((job.next_attempt - before).total_seconds())
            make_due(job)
    assert job.status == JobStatus.SUCCEEDED
    assert job.attempts == 3
    assert waits[0] == pytest.approx(10, abs=1) and waits[1] == pytest.approx(20, abs=1)


@pytest.mark.django_db
def test_a_429_waits_at_least_retry_after(settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    failures["flood"] = [TelegramRateLimitError("sendMessage", retry_after=3)]
    job = job_enqueue("test.record", {"name": "flood"})
    before = timezone.now()
    run_due("w1")
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert (job.next_attempt - before).total_seconds() >= 3


@pytest.mark.django_db
def test_a_permanent_error_fails_at_once_and_notifies_admins(bot: FakeTelegramServer) -> None:
    failures["bad"] = [
        TelegramApiError(
            "sendMessage", status=400, error_code=400, description="Bad Request: chat not found"
        )
    ]
    job = job_enqueue("test.record", {"name": "bad"})
    run_due("w1")
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    assert "chat not found" in job.last_error
    notices = [c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == OWNER_ID]
    assert len(notices) == 1
    assert f"#{job.pk} failed after 1 attempt" in notices[0].params["text"]


def telling_job(payload: dict[str, Any], run: JobRun) -> None:
    recording_job(payload, run)


telling_job.tells_admins = True  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_a_kind_that_tells_the_admins_itself_gets_no_second_notice(
    bot: FakeTelegramServer,
) -> None:
    registry.job_handlers()["test.telling"] = telling_job
    try:
        failures["told"] = [TelegramApiError("sendMessage", status=400, error_code=400)]
        job = job_enqueue("test.telling", {"name": "told"})
        run_due("w1")
    finally:
        registry.job_handlers().pop("test.telling", None)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 1)
    assert bot.calls_to("sendMessage") == []


@pytest.mark.django_db
def test_retries_stop_at_the_maximum(bot: FakeTelegramServer, settings: Any) -> None:
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    failures["down"] = [TelegramApiError("x", status=503, error_code=503)] * 10
    job = job_enqueue("test.record", {"name": "down"}, max_retries=2)
    for _ in range(5):
        make_due(job)
        run_due("w1")
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.FAILED, 3)
    assert "gave up after 3 attempts" in job.last_error
    assert len(calls) == 3


@pytest.mark.django_db
def test_an_expired_lease_is_claimed_again_and_the_old_owner_is_fenced_out() -> None:
    job = job_enqueue("test.record", {"name": "slow"})
    [claimed] = claim_due("dead-worker", lease_seconds=60)
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    [again] = claim_due("new-worker")
    assert again.attempts == 2
    # The first worker wakes up and reports: its writes change nothing.
    assert run_job(claimed, "dead-worker") == "lost"
    job.refresh_from_db()
    assert (job.status, job.lease_owner) == (JobStatus.RUNNING, "new-worker")
    assert run_job(again, "new-worker") == JobStatus.SUCCEEDED


@pytest.mark.django_db
def test_a_job_whose_lease_keeps_expiring_fails_in_the_end() -> None:
    job = job_enqueue("test.record", {"name": "killer"}, max_retries=1)
    for _ in range(2):
        claim_due("worker")
        Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    [third] = claim_due("worker")
    assert run_job(third, "worker") == JobStatus.FAILED
    assert calls == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_never_claim_one_job_twice() -> None:
    jobs = [job_enqueue("test.record", {"name": f"j{i}"}).pk for i in range(60)]
    claimed: dict[str, list[int]] = {}
    barrier = threading.Barrier(4)

    def work(owner: str) -> None:
        try:
            barrier.wait()
            mine = claimed.setdefault(owner, [])
            while batch := claim_due(owner, limit=3):
                mine.extend(job.pk for job in batch)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [pk for pks in claimed.values() for pk in pks]
    assert sorted(everything) == sorted(jobs)


@pytest.mark.django_db
def test_dedupe_keys_keep_one_unfinished_job() -> None:
    first = job_enqueue("test.record", {"name": "a"}, dedupe_key="post:1")
    assert job_enqueue("test.record", {"name": "a"}, dedupe_key="post:1").pk == first.pk
    run_due("w1")
    assert job_enqueue("test.record", {"name": "a"}, dedupe_key="post:1").pk != first.pk


@pytest.mark.django_db
def test_operators_cancel_and_retry(bot: FakeTelegramServer) -> None:
    waiting = job_enqueue("test.record", {"name": "w"}, run_at=timezone.now() + timedelta(hours=1))
    assert job_cancel(job_id=waiting.pk)
    assert run_due("w1") == 0
    failures["bad"] = [ValueError("bug")]
    failed = job_enqueue("test.record", {"name": "bad"}, max_retries=0)
    run_due("w1")
    failed.refresh_from_db()
    assert failed.status == JobStatus.FAILED
    assert job_retry_now(job_id=failed.pk)
    run_due("w1")
    failed.refresh_from_db()
    assert failed.status == JobStatus.SUCCEEDED


@pytest.mark.django_db
def test_finished_jobs_are_deleted_after_the_retention() -> None:
    old = job_enqueue("test.record", {"name": "old"})
    run_due("w1")
    Job.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=30))
    pending = job_enqueue("test.record", {"name": "p"}, run_at=timezone.now() + timedelta(days=1))
    assert jobs_delete_finished() == 1
    assert list(Job.objects.values_list("pk", flat=True)) == [pending.pk]


@pytest.mark.django_db
def test_the_jobs_admin_lists_and_retries(bot: FakeTelegramServer, admin_client: Any) -> None:
    failures["bad"] = [ValueError("bug")]
    job = job_enqueue("test.record", {"name": "bad"}, max_retries=0)
    run_due("w1")
    page = admin_client.get("/admin/telegram_bot/job/").content.decode()
    assert "test.record" in page and "failed" in page
    admin_client.post(
        "/admin/telegram_bot/job/", {"action": "retry_now", "_selected_action": [job.pk]}
    )
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


@pytest.mark.django_db
def test_each_job_starts_with_its_whole_lease() -> None:
    import time

    job_enqueue("test.record", {"name": "slow"})
    second = job_enqueue("test.record", {"name": "next"})
    left_at_start: dict[int, float] = {}

    def timed(payload: dict[str, Any], run: JobRun) -> None:
        expires = Job.objects.get(pk=run.job_id).lease_expires_at
        left_at_start[run.job_id] = (expires - timezone.now()).total_seconds()
        if payload["name"] == "slow":
            time.sleep(0.6)

    registry.job_handlers()["test.record"] = timed
    assert run_due("w1", lease_seconds=1) == 2
    # Claimed together, the second job would have started with 0.4 s of its lease left.
    assert left_at_start[second.pk] > 0.8


@pytest.mark.django_db
def test_a_claimed_job_whose_lease_ran_out_is_not_started() -> None:
    job_enqueue("test.record", {"name": "late"})
    [job] = claim_due("w1", lease_seconds=60)
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run_job(job, "w1") == "lost"
    assert calls == []


@pytest.mark.django_db(transaction=True)
def test_racing_enqueues_of_one_dedupe_key_share_one_job_and_never_crash() -> None:
    # Each round starts with the key held by a finished job, so every caller's insert fails
    # and every caller tries to free the key and insert again at the same moment.
    callers, rounds = 8, 4

    def enqueue(barrier: threading.Barrier, got: list[int], errors: list[BaseException]) -> None:
        try:
            barrier.wait()
            got.append(job_enqueue("test.record", {"name": "r"}, dedupe_key="race:1").pk)
        except BaseException as exc:  # collected: an exception in a thread is not raised
            errors.append(exc)
        finally:
            connections.close_all()

    previous = job_enqueue("test.record", {"name": "r"}, dedupe_key="race:1")
    for _ in range(rounds):
        Job.objects.filter(pk=previous.pk).update(status=JobStatus.SUCCEEDED)
        barrier = threading.Barrier(callers)
        got: list[int] = []
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=enqueue, args=(barrier, got, errors)) for _ in range(callers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(got) == callers and len(set(got)) == 1  # all callers got the one new job
        assert got[0] != previous.pk
        unfinished = Job.objects.filter(dedupe_key="race:1").exclude(
            status__in=(JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
        )
        assert list(unfinished.values_list("pk", flat=True)) == [got[0]]
        previous = Job.objects.get(pk=got[0])
    assert Job.objects.filter(kind="test.record").count() == rounds + 1


@pytest.mark.django_db
def test_a_tick_runs_what_is_due_and_returns_as_soon_as_nothing_is(monkeypatch: Any) -> None:
    from telegram_bot import tasks
    from telegram_bot.jobs import runner

    due = [job_enqueue("test.record", {"name": f"d{i}"}).pk for i in range(12)]  # > one round
    later = job_enqueue(
        "test.record", {"name": "later"}, run_at=timezone.now() + timedelta(hours=1)
    )

    def no_waiting(seconds: float) -> None:
        raise AssertionError(f"the tick waited {seconds} s for more work")

    monkeypatch.setattr(runner.time, "sleep", no_waiting)
    assert tasks.jobs_tick() == 12
    assert set(Job.objects.filter(pk__in=due).values_list("status", flat=True)) == {"succeeded"}
    assert tasks.jobs_tick() == 0  # nothing due: back at once, the later job left waiting
    assert Job.objects.get(pk=later.pk).status == JobStatus.QUEUED


@pytest.mark.django_db
def test_a_tick_waits_for_a_job_due_within_its_window_and_not_for_a_later_one(
    monkeypatch: Any,
) -> None:
    from telegram_bot import tasks
    from telegram_bot.jobs import runner

    soon = job_enqueue(
        "test.record", {"name": "soon"}, run_at=timezone.now() + timedelta(seconds=0.3)
    )
    later = job_enqueue(
        "test.record", {"name": "later"}, run_at=timezone.now() + timedelta(hours=1)
    )
    slept: list[float] = []
    real_sleep = runner.time.sleep

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(runner.time, "sleep", sleep)
    assert tasks.jobs_tick() == 1  # the one due 0.3 s later ran in this tick, on time
    assert Job.objects.get(pk=soon.pk).status == JobStatus.SUCCEEDED
    assert len(slept) == 1 and 0 < slept[0] <= 0.3
    assert tasks.jobs_tick() == 0  # the next is an hour away: back at once
    assert len(slept) == 1
    assert Job.objects.get(pk=later.pk).status == JobStatus.QUEUED


@pytest.mark.django_db
def test_an_enqueue_with_kick_starts_the_job_at_once_after_commit(
    monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)  # django-q2 runs the queued task in this process
    with django_capture_on_commit_callbacks(execute=True):
        quiet = job_enqueue("test.record", {"name": "quiet"}, run_at=timezone.now())
        assert calls == []
    assert Job.objects.get(pk=quiet.pk).status == JobStatus.QUEUED  # waits for the next tick
    with django_capture_on_commit_callbacks(execute=True):
        kicked = job_enqueue("test.record", {"name": "kicked"}, kick=True)
        assert calls == []  # not before the enqueue is committed
    assert Job.objects.get(pk=kicked.pk).status == JobStatus.SUCCEEDED
    assert {payload["name"] for _, payload, _ in calls} == {"quiet", "kicked"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_processes_racing_enqueues_of_one_dedupe_key_share_one_job() -> None:
    import multiprocessing

    from tests.integration.jobs_race_worker import enqueue_rounds

    processes, rounds = 4, 3
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes + 1)  # this process starts and ends every round
    results = ctx.Queue()
    db_name = connections["default"].settings_dict["NAME"]
    workers = [
        ctx.Process(target=enqueue_rounds, args=(db_name, "race:p", rounds, barrier, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    previous = job_enqueue("core.noop", {}, dedupe_key="race:p")
    try:
        for round_no in range(rounds):
            # The key is held by a finished job: every process frees it and inserts at once.
            Job.objects.filter(pk=previous.pk).update(status=JobStatus.SUCCEEDED)
            barrier.wait(timeout=60)
            barrier.wait(timeout=60)
            got = [results.get(timeout=60) for _ in workers]
            assert all(r == round_no for r, _ in got)
            pks = {pk for _, pk in got}
            assert len(pks) == 1 and all(isinstance(pk, int) for pk in pks), got
            [pk] = pks
            assert pk != previous.pk
            previous = Job.objects.get(pk=pk)
    except BaseException:
        barrier.abort()  # a failed round must not leave the workers waiting for the next one
        raise
    finally:
        for worker in workers:
            worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * processes
    assert Job.objects.filter(dedupe_key="race:p").count() == 1
    assert Job.objects.filter(kind="core.noop").count() == rounds + 1


@pytest.mark.django_db
def test_retry_later_replaces_the_queued_job_of_its_key_on_the_policys_delay(
    settings: Any,
) -> None:
    from telegram_bot.jobs.services import job_retry_later

    settings.JOB_RETRY_BASE_DELAY = 2
    settings.JOB_RETRY_JITTER = 0
    watchdog = job_enqueue(
        "test.record", {"name": "w"}, run_at=timezone.now() + timedelta(minutes=5), dedupe_key="k"
    )
    before = timezone.now()
    flood = TelegramRateLimitError("sendMessage", retry_after=7)
    retry = job_retry_later("test.record", {"name": "r"}, dedupe_key="k", error=flood)
    watchdog.refresh_from_db()
    assert watchdog.status == JobStatus.CANCELLED and retry.pk != watchdog.pk
    assert 7 <= (retry.next_attempt - before).total_seconds() < 8  # never before retry_after
    server = TelegramApiError("sendMessage", status=500, error_code=500)
    again = job_retry_later("test.record", {"name": "r"}, dedupe_key="k", error=server)
    assert 2 <= (again.next_attempt - before).total_seconds() < 3  # the policy's first delay
    assert list(Job.objects.filter(status=JobStatus.QUEUED).values_list("pk", flat=True)) == [
        again.pk
    ]
    # A job of the key that is running keeps the work: it is returned, nothing is queued.
    make_due(again)
    [running] = claim_due("w1", limit=1)
    assert job_retry_later("test.record", {}, dedupe_key="k", error=server).pk == running.pk
    assert not Job.objects.filter(status=JobStatus.QUEUED).exists()


@pytest.mark.django_db
def test_call_or_retry_later_queues_once_raises_in_its_job_drops_a_refusal() -> None:
    from telegram_bot.jobs.services import call_or_retry_later

    calls: list[str] = []

    def refused(error: TelegramApiError) -> Any:
        def call() -> None:
            calls.append(error.method)
            raise error

        return call

    flood = TelegramRateLimitError("banChatMember", retry_after=3)
    payload = {"chat_id": -100, "user_id": 7}
    assert call_or_retry_later(lambda: calls.append("ok"), "test.record", payload) is True
    assert call_or_retry_later(refused(flood), "test.record", payload) is False
    assert call_or_retry_later(refused(flood), "test.record", payload) is False  # same key
    [queued] = Job.objects.filter(status=JobStatus.QUEUED)
    assert queued.kind == "test.record" and queued.payload == payload
    assert queued.dedupe_key == "test.record:-100:7"
    with pytest.raises(TelegramRateLimitError):  # inside its job: the runner retries
        call_or_retry_later(refused(flood), "test.record", payload, in_job=True)
    gone = TelegramApiError("banChatMember", status=400, error_code=400, description="no rights")
    assert call_or_retry_later(refused(gone), "test.record", {"chat_id": 1}) is False
    assert call_or_retry_later(refused(gone), "test.record", {"chat_id": 1}, in_job=True) is False
    assert Job.objects.filter(status=JobStatus.QUEUED).count() == 1  # still the one
    assert calls == [
        "ok",
        "banChatMember",
        "banChatMember",
        "banChatMember",
        "banChatMember",
        "banChatMember",
    ]
