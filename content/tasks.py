"""Job handlers and django-q2 entry points of the content app. Thin: load, call the service."""

from __future__ import annotations

from typing import Any

from content.publishing import post_publish
from content.reconcile import posts_reconcile
from telegram_bot.jobs.runner import JobRun


def publish_job(payload: dict[str, Any], run: JobRun) -> None:
    """``content.publish``: publish the post if it is (still) scheduled and due."""
    post_publish(post_id=int(payload["post_id"]), run=run)


def content_reconcile() -> int:
    """django-q2 schedule: hand posts their job left behind to a new job, or fail them."""
    return posts_reconcile()


JOB_HANDLERS = {"content.publish": publish_job}
