"""Jobs and delivery: two notices that read alike keep their own retry jobs;
the jobs tick starts no job after its window; an unreadable 200 is an unknown outcome, not a
refusal; a long transient error keeps its "retrying" mark; a notice job killed mid-send is
not sent again. Each test failed on the code before."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from content.models import PostStatus
from support.models import Ticket
from telegram_bot.jobs import registry, runner
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import JobRun, run_due
from telegram_bot.jobs.services import job_enqueue
from tests.conftest import OWNER_ID
from tests.content.conftest import make_due_post
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, message, sent


def _photo(file_id: str) -> list[dict[str, Any]]:
    return [{"file_id": file_id, "file_unique_id": file_id, "width": 10, "height": 10}]


def test_two_identical_looking_admin_notices_retried_by_jobs_both_arrive(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    """Two photos without a caption in one ticket give the admins two notices with the same
    text ("[photo]"). When Telegram refuses both for the moment (429), each must be retried:
    the second retry must not replace the first (its on_sent follow-up carries the first
    photo), or the admin never sees the first photo."""
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    post_update(message("/support the app crashes"))
    ticket = Ticket.objects.get()
    # Each photo: the user's confirmation and the owner's notice are refused (flood control).
    bot.fail_next("sendMessage", status=429, retry_after=1, times=2)
    post_update(message(None, photo=_photo("first")))
    bot.fail_next("sendMessage", status=429, retry_after=1, times=2)
    post_update(message(None, photo=_photo("second")))
    assert ticket.messages.count() == 3
    for _ in range(3):
        Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
        run_due("test-worker")
    photos = {c.params["photo"] for c in sent(bot, "sendPhoto", chat_id=OWNER_ID)}
    assert photos == {"first", "second"}


# --- the django-q2 tick keeps to its window -----------------------------------------------------
@pytest.fixture
def slow_kind() -> Iterator[list[int]]:
    """A job kind whose every run takes 0.2 s (a send to a slow Telegram, say)."""
    started: list[int] = []

    def slow(payload: dict[str, Any], run: JobRun) -> None:
        started.append(run.job_id)
        time.sleep(0.2)

    handlers = registry.job_handlers()
    handlers["review.slow"] = slow
    yield started
    handlers.pop("review.slow", None)


@pytest.mark.django_db
def test_a_tick_starts_no_job_after_its_window(slow_kind: list[int]) -> None:
    """``run_until_idle(seconds)`` (the jobs_tick, "at most 50 s" so that it ends well within
    django-q2's 120 s task timeout, whose SIGALRM aborts whatever job is sending then) must not
    start jobs once its window is over. run_due runs up to 10 jobs per round without looking
    at the deadline: with a backlog, a 0.3 s window ran every one of 8 jobs of 0.2 s (1.6 s)."""
    for i in range(8):
        job_enqueue("review.slow", {"i": i})
    started = time.monotonic()
    runner.run_until_idle(0.3)
    elapsed = time.monotonic() - started
    # Jobs start at 0.0, 0.2 (and perhaps 0.4 on a slow machine): never the whole backlog.
    assert len(slow_kind) <= 3, f"{len(slow_kind)} jobs ran in a 0.3 s window ({elapsed:.1f} s)"


# --- a malformed 200 answer is not a refusal -----------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [b'{"ok": true}', b"<html>ok</html>"],
    ids=["ok-without-result", "html-200"],
)
def test_a_200_answer_that_cannot_be_read_is_not_taken_for_a_refusal(
    bot: FakeTelegramServer, body: bytes
) -> None:
    """HTTP 200 from the Bot API (or its proxy) means the request was processed; a body that
    cannot be read (``ok: true`` without ``result``, a page that is not JSON) says nothing
    about whether the post went out. The client classifies it ``reached=True`` and permanent
    (``telegram_error`` with no payload and status 200), so the publication takes it for
    "Telegram refused": the post is marked plainly failed and the admins are told to "publish
    it again" -- a second copy in the channel. It must be an unknown outcome instead."""
    bot.fail_next("sendMessage", status=200, raw_body=body)
    post = make_due_post()
    run_due("w1")
    post.refresh_from_db()
    assert post.status == PostStatus.FAILED
    assert post.outcome_unknown, f"marked refused: {post.last_error!r}"


# --- support: a transient failure with a long description is still retried ----------------------
def test_a_transient_failure_with_a_long_description_is_still_retried(
    bot: FakeTelegramServer, post_update: Any, settings: Any
) -> None:
    """The user's copy refused with a 5xx is retried by the support.deliver job, which may
    claim it only when ``delivery_error`` ends with "; retrying automatically". That marker is
    appended to the description and the whole cut to 500 characters
    (``entry_delivery_failed``), so a long description (a proxy's or Telegram's 5xx text) cuts
    the marker off: the job finds nothing to claim, ends "succeeded", and the user never gets
    the message though the failure was transient."""
    settings.JOB_RETRY_BASE_DELAY = 0.01
    settings.JOB_RETRY_JITTER = 0
    bot.fail_next("sendMessage", status=500, description="Internal Server Error: " + "x" * 600)
    post_update(message("/support the app crashes"))
    assert not [t for t in _texts_to_user(bot) if t.startswith("Ticket #1 opened.")]
    Job.objects.filter(status=JobStatus.QUEUED).update(next_attempt=timezone.now())
    run_due("test-worker")
    assert [t for t in _texts_to_user(bot) if t.startswith("Ticket #1 opened.")]


def _texts_to_user(bot: FakeTelegramServer) -> list[str]:
    return [c.params["text"] for c in sent(bot, "sendMessage", chat_id=USER)]


# --- a worker killed after Telegram took an admin notice -----------------------------------------
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_an_admin_notice_whose_worker_was_killed_mid_send_is_not_sent_again(
    live_bot: FakeTelegramServer,
) -> None:
    """``core.admin_notice`` sends with no claim of its own (no token, no deadline): its only
    guard is the job's lease. A worker killed (SIGKILL, the OOM killer, django-q2's timeout)
    after Telegram accepted the notice leaves the job running; once the lease runs out the next
    worker runs the handler again and the admin gets the notice twice (and an on_sent
    follow-up, such as a ticket's file, twice). delivery.py promises that every admin notice
    follows the claim / deadline steps, an attempt that died in the window being an unknown
    outcome that is never sent again automatically."""
    import multiprocessing

    from django.db import connections

    from tests.integration.notice_kill_worker import run_jobs

    payload = {
        "chat_id": OWNER_ID,
        "text": "Ticket #7: the answer may or may not have arrived",
        "purpose": "review",
        "reply_markup": None,
        "on_sent": None,
    }
    job = job_enqueue("core.admin_notice", payload)
    live_bot.delay_next("sendMessage", 30)  # Telegram takes it, its answer is slow to come
    ctx = multiprocessing.get_context("spawn")
    db_name = connections["default"].settings_dict["NAME"]
    child = ctx.Process(target=run_jobs, args=(db_name, live_bot.base_url))
    child.start()
    try:
        deadline = time.monotonic() + 60
        while not live_bot.calls_to("sendMessage") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_bot.calls_to("sendMessage"), "the worker never sent"
    finally:
        child.kill()
        child.join(timeout=30)
    # The dead worker's lease runs out (JOB_LEASE_SECONDS later); the next tick takes the job.
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    run_due("next-worker")
    notices = [c for c in live_bot.calls_to("sendMessage") if c.params["chat_id"] == OWNER_ID]
    assert len(notices) == 1, f"the admin got the notice {len(notices)} times"
