"""Recurring posts: every day / weekday / week at the local time of the first publication in
the post's zone, until an end date; each occurrence a post of its own, created once by its
occurrence key and published once, also when the recurring job is delivered again."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from content.errors import PostStateError
from content.models import Post, PostStatus
from content.occurrences import post_recur
from content.publishing import post_publish_now
from content.reconcile import posts_reconcile
from content.recurrence import occurrence_from
from content.services import PostContent, post_create
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.jobs.runner import run_due
from tests.content.conftest import CHANNEL, channel_sends
from tests.content.test_admin import ADD, errors_of, form
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db
BERLIN = "Europe/Berlin"


def test_a_daily_time_keeps_its_local_hour_across_daylight_saving() -> None:
    first = datetime(2026, 3, 27, 8, 0, tzinfo=UTC)  # 09:00 in Berlin (CET)

    def after(moment: datetime, every: str = "daily") -> datetime | None:
        return occurrence_from(
            every=every,
            first=first,
            zone_name=BERLIN,
            until=date(2026, 4, 10),
            start=moment + timedelta(seconds=1),
        )

    second = after(first)
    assert second is not None and second.astimezone(UTC) == datetime(2026, 3, 28, 8, tzinfo=UTC)
    third = after(second)
    assert third is not None and third.astimezone(UTC) == datetime(2026, 3, 29, 7, tzinfo=UTC)
    # Friday 27 March: the next weekday is Monday the 30th, the next week Friday 3 April.
    monday = after(first, "weekdays")
    assert monday is not None and monday.date() == date(2026, 3, 30)
    friday = after(first, "weekly")
    assert friday is not None and friday.date() == date(2026, 4, 3) and friday.hour == 9
    last = after(datetime(2026, 4, 10, 8, tzinfo=UTC))
    assert last is None  # the end date is the last day


def recurring(until_days: int = 2, every: str = "daily") -> Post:
    post = post_create(
        content=PostContent(
            channel=CHANNEL,
            text="Good morning",
            repeat=every,
            repeat_until=timezone.localdate() + timedelta(days=until_days),
        ),
        created_by="test",
        publish_at=timezone.now() + timedelta(minutes=5),
    )
    return post


def bring_due(post: Post, *, ago: timedelta = timedelta()) -> None:
    moment = timezone.now() - ago
    Post.objects.filter(pk=post.pk).update(publish_at=moment)
    Job.objects.filter(dedupe_key=f"recur:{post.pk}", status=JobStatus.QUEUED).update(
        next_attempt=timezone.now()
    )


def run_all() -> None:
    while run_due("w1"):
        pass


def test_each_occurrence_is_published_once(bot: FakeTelegramServer) -> None:
    post = recurring()
    assert post.status == PostStatus.SCHEDULED
    assert Job.objects.get(dedupe_key=f"recur:{post.pk}").status == JobStatus.QUEUED
    assert not Job.objects.filter(dedupe_key=f"post:{post.pk}").exists()
    bring_due(post)
    due = Post.objects.get(pk=post.pk).publish_at
    run_all()
    [occurrence] = Post.objects.filter(recurrence_of=post)
    assert occurrence.status == PostStatus.PUBLISHED and occurrence.text == "Good morning"
    assert occurrence.occurrence_key == f"{post.pk}:{timezone.localdate(due).isoformat()}"
    assert len(channel_sends(bot)) == 1
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED and post.publish_at == due + timedelta(days=1)
    assert Job.objects.get(dedupe_key=f"recur:{post.pk}").next_attempt == post.publish_at
    assert post_recur(post_id=post.pk) is None  # re-delivered: not due
    # Had the recurring post not moved on, its occurrence's key still stops a second one.
    Post.objects.filter(pk=post.pk).update(publish_at=due)
    assert post_recur(post_id=post.pk) == occurrence
    run_all()
    assert Post.objects.filter(recurrence_of=post).count() == 1
    assert len(channel_sends(bot)) == 1


def test_after_the_end_date_the_recurring_post_is_archived(bot: FakeTelegramServer) -> None:
    post = post_create(
        content=PostContent(
            channel=CHANNEL, text="Once more", repeat="daily", repeat_until=timezone.localdate()
        ),
        created_by="test",
    )
    Post.objects.filter(pk=post.pk).update(status=PostStatus.SCHEDULED, publish_at=timezone.now())
    post_recur(post_id=post.pk)
    run_all()
    post.refresh_from_db()
    assert post.status == PostStatus.ARCHIVED
    assert len(channel_sends(bot)) == 1


def test_an_occurrence_missed_while_no_worker_ran_is_skipped(bot: FakeTelegramServer) -> None:
    post = recurring()
    bring_due(post, ago=timedelta(hours=2))
    run_all()
    post.refresh_from_db()
    assert not Post.objects.filter(recurrence_of=post).exists() and not channel_sends(bot)
    assert "skipped" in post.last_error and post.publish_at > timezone.now()


def test_a_recurring_post_is_not_published_now(bot: FakeTelegramServer) -> None:
    post = recurring()
    with pytest.raises(PostStateError, match="repeats"):
        post_publish_now(post_id=post.pk)
    assert not bot.calls


def until(days: int) -> str:
    return (timezone.localdate() + timedelta(days=days)).isoformat()


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"repeat": "daily"}, "needs an end date"),
        ({"repeat_until": until(3)}, "An end date needs a repetition"),
        ({"repeat": "daily", "repeat_until": until(400)}, "more than a year ahead"),
        (
            {
                "repeat": "weekly",
                "repeat_until": until(3),
                "delete_at": (timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M"),
            },
            "no unpin or deletion time",
        ),
        (
            {
                "repeat": "daily",
                "repeat_until": until(1),
                "publish_at": (timezone.now() + timedelta(days=5)).strftime("%Y-%m-%dT%H:%M"),
            },
            "before the first publication",
        ),
    ],
)
def test_bad_repetitions_are_refused_in_the_form(
    bot: FakeTelegramServer, admin_client: Client, fields: dict[str, Any], problem: str
) -> None:
    response = admin_client.post(ADD, form(**fields))
    assert response.status_code == 200
    assert problem in errors_of(response)
    assert not Post.objects.exists() and not bot.calls


def test_the_form_makes_a_weekday_post(bot: FakeTelegramServer, admin_client: Client) -> None:
    publish_at = timezone.localtime() + timedelta(hours=1)
    response = admin_client.post(
        ADD,
        form(
            repeat="weekdays",
            repeat_until=until(30),
            publish_at=publish_at.strftime("%Y-%m-%dT%H:%M"),
        ),
    )
    assert response.status_code == 302, errors_of(response)
    post = Post.objects.get()
    assert post.status == PostStatus.SCHEDULED and post.repeat_zone
    assert post.publish_at is not None and timezone.localtime(post.publish_at).weekday() < 5
    page = admin_client.get("/admin/content/post/").content.decode()
    assert "recurring" in page


def test_a_recurring_post_left_without_its_job_gets_a_new_one(bot: FakeTelegramServer) -> None:
    post = recurring()
    Job.objects.filter(dedupe_key=f"recur:{post.pk}").update(status=JobStatus.CANCELLED)
    Post.objects.filter(pk=post.pk).update(publish_at=timezone.now() - timedelta(hours=3))
    assert posts_reconcile() == 1
    assert Job.objects.get(dedupe_key=f"recur:{post.pk}", status=JobStatus.QUEUED)
    assert not Job.objects.filter(dedupe_key=f"post:{post.pk}").exists()
    run_all()  # three hours late: skipped, moved on to the next occurrence
    post.refresh_from_db()
    assert post.status == PostStatus.SCHEDULED and post.publish_at > timezone.now()
    assert "skipped" in post.last_error and not channel_sends(bot)
