"""Errors of the content app. Each says whether retrying can help (the job policy reads it)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot.errors import BotError


class PostError(BotError):
    """A post cannot do what was asked in its current state."""

    code = "post"
    user_message = gettext_lazy("That cannot be done with this post.")

    def __init__(self, message: str, *, user_message: str | None = None) -> None:
        super().__init__(message, user_message=user_message or message)


class PostNotFoundError(PostError):
    code = "post_not_found"


class PostStateError(PostError):
    """The post's status does not allow the operation (e.g. editing an archived post)."""

    code = "post_state"


class PublishInProgressError(PostError):
    """Another attempt may still be waiting for Telegram's answer: come back after it."""

    retryable = True
    code = "post_publish_in_progress"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PostNotDueError(PostError):
    """The post was rescheduled while its job was starting: the job waits for publish_at."""

    retryable = True
    code = "post_not_due"

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PublishOutcomeUnknownError(PostError):
    """Telegram may or may not have published the post: never retried automatically."""

    code = "post_publish_outcome_unknown"


class LeaseTooShortError(PostError):
    """The job's lease is lost, or too close to its end to start a send: nothing was sent, the
    post stays scheduled, and the job comes back with a fresh lease."""

    retryable = True
    code = "post_publish_lease_too_short"
