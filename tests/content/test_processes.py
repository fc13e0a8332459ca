"""Real worker processes (``manage.py run_jobs``) on the test database against the fake Bot API:
two clusters at once, and a worker killed while it holds a job's lease (the post is published
once, and its one failure reaches each admin once; a recurring post's occurrence is created
and sent once across the kill and two restarts)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.utils import timezone

from content.models import Post, PostStatus
from content.services import PostContent, post_create
from telegram_bot.jobs.models import Job, JobStatus
from tests.content.conftest import admin_notices, channel_sends, make_due_post, publish_job
from tests.fakes.telegram import FakeTelegramServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def database_url() -> str:
    """The test database, as the worker processes' DATABASE_URL."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}{db.get('HOST') or '127.0.0.1'}{port}/{db['NAME']}"


def worker_env(bot: FakeTelegramServer, settings: Any) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TELEGRAM_"))}
    keep.pop("DATABASE_URL", None)
    keep.pop("ADMIN_TELEGRAM_IDS", None)
    return {
        **keep,  # REDIS_URL stays only if the suite itself runs with it
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": database_url(),
        "TELEGRAM_API_BASE_URL": bot.base_url,
        "TELEGRAM_BOT_TOKEN": settings.TELEGRAM_BOT_TOKEN,
        "OWNER_TELEGRAM_ID": "1000",
        "DJANGO_SECRET_KEY": "content-process-tests-secret-key-0123456789-abcdefghijklmnop",
    }


def start_worker(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_jobs", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> int:
    """Wait for a worker; return how many jobs it ran."""
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    match = re.search(r"ran (\d+) job\(s\)", out)
    assert match, out + err
    return int(match.group(1))


def wait_for(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_two_worker_clusters_started_together_publish_a_due_post_once(
    bot: FakeTelegramServer, settings: Any
) -> None:
    posts = [make_due_post(f"Due post {n}") for n in range(3)]
    # Slow answers keep publications in flight while the other cluster is claiming.
    bot.delay_next("sendMessage", 0.3, times=3)
    env = worker_env(bot, settings)
    workers = [start_worker(env, "--seconds", "3") for _ in range(2)]
    ran = [finish(worker) for worker in workers]
    assert sum(ran) == len(posts)  # every job ran once, in one cluster or the other
    for post in posts:
        post.refresh_from_db()
        assert post.status == PostStatus.PUBLISHED
        sends = [c for c in channel_sends(bot) if c.params["text"] == post.text]
        assert len(sends) == 1
        assert publish_job(post).attempts == 1
    assert len(channel_sends(bot)) == len(posts)


def test_a_worker_killed_while_holding_the_lease_leaves_the_post_published_once(
    bot: FakeTelegramServer, settings: Any
) -> None:
    post = make_due_post("Published exactly once")
    # Telegram takes the message at once but answers only after 10 s: the worker is killed
    # while it waits, holding the job's 3-second lease (a send needs MIN_SEND_SECONDS of it
    # left when it starts: the other 2 s leave room for a slow machine).
    bot.delay_next("sendMessage", 10)
    env = worker_env(bot, settings)
    doomed = start_worker(env, "--lease-seconds", "3")
    try:
        wait_for(lambda: bot.calls_to("sendMessage"))
        assert doomed.poll() is None  # still waiting for the answer
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
    job = publish_job(post)
    first_owner = job.lease_owner
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 1)
    post.refresh_from_db()
    assert post.status == PostStatus.PUBLISHING

    # After the lease expires, the job runs again, in a new worker.
    assert job.lease_expires_at is not None
    wait_for(lambda: timezone.now() > job.lease_expires_at, timeout=10)
    assert finish(start_worker(env)) == 1

    job.refresh_from_db()
    assert job.attempts == 2 and job.lease_owner != first_owner
    assert job.status == JobStatus.FAILED and "PublishOutcomeUnknownError" in job.last_error
    post.refresh_from_db()
    assert (post.status, post.outcome_unknown) == (PostStatus.FAILED, True)
    # Telegram published it once (the killed call), and nothing sent it again.
    [published] = channel_sends(bot)
    assert published.params["text"] == "Published exactly once"
    assert any(
        f"Post #{post.pk}" in text and "may or may not be in the channel" in text
        for text in admin_notices(bot)
    )


def notices_to(bot: FakeTelegramServer, admin_id: int) -> list[str]:
    return [
        c.params["text"]
        for c in bot.calls_to("sendMessage")
        if not c.failed and c.params["chat_id"] == admin_id
    ]


def test_a_worker_killed_inside_the_send_leaves_one_notice_per_admin(
    bot: FakeTelegramServer, settings: Any
) -> None:
    """The attempt after the kill finds the post still publishing past its deadline: the
    outcome is unknown, recorded once (failed, outcome unknown) and told once to each admin
    by the post; the job that ends failed adds no notice of its own."""
    owner, other_admin = 1000, 2000
    settings.ADMIN_TELEGRAM_IDS = [other_admin]
    post = make_due_post("Told once")
    bot.delay_next("sendMessage", 10)  # taken at once, answered after the kill
    env = {**worker_env(bot, settings), "ADMIN_TELEGRAM_IDS": str(other_admin)}
    doomed = start_worker(env, "--lease-seconds", "3")
    try:
        wait_for(lambda: bot.calls_to("sendMessage"))
        assert doomed.poll() is None
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
    job = publish_job(post)
    assert job.lease_expires_at is not None
    wait_for(lambda: timezone.now() > job.lease_expires_at, timeout=10)

    assert finish(start_worker(env)) == 1  # the job's second attempt judges the post
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "PublishOutcomeUnknownError" in job.last_error
    post.refresh_from_db()
    assert (post.status, post.outcome_unknown) == (PostStatus.FAILED, True)
    assert finish(start_worker(env, "--seconds", "1")) == 0  # nothing left to run

    [published] = channel_sends(bot)
    assert published.params["text"] == "Told once"
    for admin_id in (owner, other_admin):
        notices = notices_to(bot, admin_id)
        assert len(notices) == 1, (admin_id, notices)
        assert f"Post #{post.pk}" in notices[0]
        assert "may or may not be in the channel" in notices[0]


def test_a_recurring_post_s_occurrence_is_published_once_across_a_killed_worker(
    bot: FakeTelegramServer, settings: Any
) -> None:
    recurring = post_create(
        content=PostContent(
            channel="@news_channel",
            text="Every morning",
            repeat="daily",
            repeat_until=timezone.localdate() + timedelta(days=5),
        ),
        created_by="test",
        publish_at=timezone.now() + timedelta(minutes=5),
    )
    Post.objects.filter(pk=recurring.pk).update(publish_at=timezone.now())
    Job.objects.filter(dedupe_key=f"recur:{recurring.pk}").update(next_attempt=timezone.now())
    # The occurrence's send is taken by Telegram but answered late: its worker is killed.
    bot.delay_next("sendMessage", 10)
    env = worker_env(bot, settings)
    doomed = start_worker(env, "--lease-seconds", "3")
    try:
        wait_for(lambda: bot.calls_to("sendMessage"))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
    time.sleep(3.5)  # the killed worker's lease runs out
    for _ in range(2):  # restarted twice: nothing more is created or sent
        finish(start_worker(env, "--seconds", "2"))
    [occurrence] = Post.objects.filter(recurrence_of=recurring)
    assert occurrence.occurrence_key is not None
    assert len(channel_sends(bot)) == 1  # the killed call's, never sent again
    occurrence.refresh_from_db()
    assert occurrence.status == PostStatus.FAILED and occurrence.outcome_unknown
    recurring.refresh_from_db()
    assert recurring.status == PostStatus.SCHEDULED
    assert recurring.publish_at is not None and recurring.publish_at > timezone.now()
