"""Writes on posts: create, edit (in the channel too once published), schedule, archive.

Publishing itself is ``content.publishing.post_publish``. Every write takes the post's row
lock; a Telegram call on a published message (edit, delete) runs outside any transaction,
claimed beforehand with the post's attempt token so that two of them never overlap.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from content import delivery, jobs, recurrence, validation
from content.errors import PostStateError
from content.models import UNPUBLISHED, Post, PostStatus
from content.publishing import post_mark_published, post_publish, post_publish_now
from content.removal import Removal, post_expire, post_set_removal, post_unpin
from content.selectors import post_locked
from telegram_bot.client import SEND_WINDOW_SECONDS

log = logging.getLogger(__name__)

__all__ = [
    "PostChanges",
    "PostContent",
    "Removal",
    "post_archive",
    "post_create",
    "post_delete_draft",
    "post_expire",
    "post_mark_published",
    "post_photo_remember",
    "post_publish",
    "post_publish_now",
    "post_schedule",
    "post_set_removal",
    "post_set_repeat",
    "post_unpin",
    "post_unschedule",
    "post_update",
]


@dataclass(frozen=True)
class PostContent:
    """What a new post says and where it goes."""

    channel: str
    text: str = ""
    buttons: validation.Buttons = field(default_factory=list)
    photo: File | None = None  # an upload (admin site), stored under MEDIA_ROOT
    photo_file_id: str = ""  # a photo already on Telegram (panel)
    album: list[dict[str, str]] = field(default_factory=list)  # 2-10 photos/videos
    silent: bool = False  # published without a notification sound
    pin: bool = False  # pinned in the channel once published
    poll_question: str = ""  # a poll instead of a message
    poll_options: list[str] = field(default_factory=list)
    poll_type: str = "regular"  # or "quiz"
    poll_correct_option: int | None = None  # a quiz's correct option, 0-based
    poll_explanation: str = ""  # a quiz's explanation
    delete_at: datetime | None = None  # the channel message is deleted then
    unpin_at: datetime | None = None  # a pinned post is unpinned then
    repeat: str = ""  # "daily", "weekdays", "weekly": a recurring post
    also_to: list[str] = field(default_factory=list)  # other channels, a copy in each
    repeat_until: date | None = None  # its last day (inclusive, in its zone)


@dataclass(frozen=True)
class PostChanges:
    """An edit: None leaves a field as it is."""

    text: str | None = None
    buttons: validation.Buttons | None = None
    channel: str | None = None
    photo: File | None = None
    remove_photo: bool = False
    silent: bool | None = None
    pin: bool | None = None
    poll_question: str | None = None
    poll_options: list[str] | None = None
    poll_type: str | None = None
    # Read whenever poll_options or poll_type is given (None: no correct option).
    poll_correct_option: int | None = None
    poll_explanation: str | None = None
    also_to: list[str] | None = None
    album: list[dict[str, str]] | None = None

    @property
    def touches_media_or_channel(self) -> bool:
        """What a published post can no longer change (its channel message is out)."""
        return (
            self.channel is not None
            or self.photo is not None
            or self.remove_photo
            or self.silent is not None
            or self.pin is not None
            or self.poll_question is not None
            or self.poll_options is not None
            or self.poll_type is not None
            or self.poll_explanation is not None
            or self.also_to is not None
            or self.album is not None
        )


@transaction.atomic
def post_create(
    *,
    content: PostContent,
    created_by: str,
    publish_at: datetime | None = None,
    source_update_id: int | None = None,
) -> Post:
    """Create a draft (or, with ``publish_at``, a scheduled post). Input outside Telegram's
    limits raises ValidationError and creates nothing. With ``source_update_id`` (the panel),
    a re-delivered update returns the post it created the first time."""
    if source_update_id is not None:
        existing = Post.objects.filter(source_update_id=source_update_id).first()
        if existing is not None:
            return existing
    post = Post(
        channel=content.channel,
        text=content.text,
        buttons=content.buttons,
        photo_file_id=content.photo_file_id,
        album=content.album,
        silent=content.silent,
        pin=content.pin,
        poll_question=content.poll_question,
        poll_options=content.poll_options,
        poll_type=content.poll_type,
        poll_correct_option=content.poll_correct_option,
        poll_explanation=content.poll_explanation,
        delete_at=content.delete_at,
        unpin_at=content.unpin_at,
        repeat=content.repeat,
        also_to=content.also_to,
        repeat_until=content.repeat_until,
        created_by=created_by[:100],
        source_update_id=source_update_id,
    )
    if content.photo is not None:
        post.photo = content.photo
    for name in ("delete_at", "unpin_at"):
        if getattr(content, name) is not None:
            validation.check_later(getattr(content, name), field=name)
    post.publish_at = publish_at  # checked against the unpin and deletion times
    post.full_clean(exclude=["status"])
    post.publish_at = None
    if publish_at is not None:
        validation.check_publish_at(publish_at)
    try:
        with transaction.atomic():
            post.save()
    except IntegrityError:
        if source_update_id is None:
            raise
        return Post.objects.get(source_update_id=source_update_id)  # a concurrent re-delivery
    if publish_at is not None:
        _schedule(post, publish_at)
    return post


def post_update(*, post_id: int, changes: PostChanges) -> Post:
    """Edit a post. Before publication only the database changes. Once published, the text
    (or caption) and the buttons can change: the channel message is edited first
    (editMessageText or editMessageCaption; the buttons alone, also a poll's, with
    editMessageReplyMarkup), then the post; its channel and media cannot. Telegram's "message
    is not modified" (an edit repeated after a lost answer) counts as done."""
    with transaction.atomic():
        post = post_locked(post_id)
        if post.status in UNPUBLISHED:
            _apply(post, changes)
            return post
        if post.status != PostStatus.PUBLISHED:
            raise PostStateError(f"Post #{post.pk} is {post.status}: it cannot be edited.")
        if changes.touches_media_or_channel:
            raise PostStateError(
                f"Post #{post.pk} is published: only its text and buttons can still change."
            )
        text = post.text if changes.text is None else changes.text
        buttons = post.buttons if changes.buttons is None else changes.buttons
        if post.is_poll and text != post.text:
            raise PostStateError(
                f"Post #{post.pk} is a published poll: only its buttons can still change."
            )
        if not post.is_poll:
            validation.check_text(text, has_photo=post.has_caption)
        buttons = validation.check_buttons(buttons)
        if post.is_album:
            validation.check_album(post.album, text=text, others=False, buttons=bool(buttons))
        if (text, buttons) == (post.text, post.buttons):
            return post
        if post.channel_message_id is None:
            raise PostStateError(
                f"Post #{post.pk}: the channel message's id is unknown, it cannot be edited."
            )
        token = _claim_channel_message(post)
    try:
        if text == post.text:  # the buttons alone: editMessageReplyMarkup
            delivery.edit_buttons(post, buttons=buttons)
        else:
            delivery.edit(post, text=text, buttons=buttons)
    except Exception:
        _release(post.pk, token)
        raise
    Post.objects.filter(pk=post.pk, attempt_token=token).update(
        text=text,
        buttons=buttons,
        attempt_token="",
        attempt_deadline=None,
        updated_at=timezone.now(),
    )
    post.refresh_from_db()
    return post


@transaction.atomic
def post_schedule(*, post_id: int, publish_at: datetime, removal: Removal | None = None) -> Post:
    """Publish at ``publish_at`` (aware, in the future): the post's job is set to that time.
    With ``removal``, the unpin and deletion times change with it (checked together)."""
    post = post_locked(post_id)
    if post.status not in UNPUBLISHED:
        raise PostStateError(f"Post #{post.pk} is {post.status}: it cannot be scheduled.")
    if removal is not None:
        for name, value in (("delete_at", removal.delete_at), ("unpin_at", removal.unpin_at)):
            if value is not None and value != getattr(post, name):
                validation.check_later(value, field=name)
        post.delete_at, post.unpin_at = removal.delete_at, removal.unpin_at
    post.publish_at = publish_at
    post.clean()
    validation.check_publish_at(publish_at)
    _schedule(post, publish_at)
    return post


@transaction.atomic
def post_set_repeat(*, post_id: int, repeat: str, until: date | None) -> Post:
    """Make an unpublished post recurring (``daily``, ``weekdays``, ``weekly`` until ``until``,
    in the console's zone) or not (``""``). A scheduled post's job follows."""
    post = post_locked(post_id)
    if post.status not in UNPUBLISHED:
        raise PostStateError(f"Post #{post.pk} is {post.status}: its repetition cannot change.")
    post.repeat, post.repeat_until = repeat, until
    post.repeat_zone = timezone.get_current_timezone_name() if repeat else ""
    post.full_clean(exclude=["status", "source_update_id"])
    post.updated_at = timezone.now()
    post.save(update_fields=["repeat", "repeat_until", "repeat_zone", "updated_at"])
    if post.status == PostStatus.SCHEDULED and post.publish_at is not None:
        _schedule(post, max(post.publish_at, timezone.now()))
    return post


@transaction.atomic
def post_unschedule(*, post_id: int) -> Post:
    """Back to draft: the job is cancelled."""
    post = post_locked(post_id)
    if post.status not in UNPUBLISHED:
        raise PostStateError(f"Post #{post.pk} is {post.status}: it cannot go back to draft.")
    jobs.publish_job_cancel(post.pk)
    post.status, post.publish_at, post.outcome_unknown = PostStatus.DRAFT, None, False
    post.updated_at = timezone.now()
    post.save(update_fields=["status", "publish_at", "outcome_unknown", "updated_at"])
    return post


def post_archive(*, post_id: int, delete_message: bool = False) -> Post:
    """Archive a post: an unpublished one is never sent (its job is cancelled); a published
    one stays in the channel unless ``delete_message`` (deleteMessage first; a message that is
    already gone counts as deleted). Archiving an archived post changes nothing."""
    with transaction.atomic():
        post = post_locked(post_id)
        if post.status == PostStatus.ARCHIVED:
            return post
        if post.status == PostStatus.PUBLISHING:
            raise PostStateError(f"Post #{post.pk} is being published: archive it afterwards.")
        if (
            post.status != PostStatus.PUBLISHED
            or not delete_message
            or post.channel_message_id is None
        ):
            jobs.publish_job_cancel(post.pk)
            post.status, post.updated_at = PostStatus.ARCHIVED, timezone.now()
            post.save(update_fields=["status", "updated_at"])
            return post
        token = _claim_channel_message(post)
    try:
        delivery.delete(post)
    except Exception:
        _release(post.pk, token)
        raise
    Post.objects.filter(pk=post.pk, attempt_token=token).update(
        status=PostStatus.ARCHIVED,
        message_deleted=True,
        attempt_token="",
        attempt_deadline=None,
        updated_at=timezone.now(),
    )
    post.refresh_from_db()
    return post


@transaction.atomic
def post_delete_draft(*, post_id: int) -> None:
    """Delete a post that never reached the channel (draft, or archived before publication)."""
    post = post_locked(post_id)
    if post.status != PostStatus.DRAFT and not (
        post.status == PostStatus.ARCHIVED and post.channel_message_id is None
    ):
        raise PostStateError(f"Post #{post.pk} is {post.status}: archive it instead.")
    jobs.publish_job_cancel(post.pk)
    post.delete()


def post_photo_remember(*, post_id: int, photo: str, file_id: str) -> None:
    """Keep Telegram's file_id of the uploaded photo ``photo`` (its stored name: every upload
    gets a new one) that a preview sent, so that later sends need no upload. Only fills an
    empty field of a post that still has that photo: a photo replaced while the preview was
    in flight must not get the old photo's file_id (the publication would send the old one)."""
    if file_id and photo:
        Post.objects.filter(pk=post_id, photo_file_id="", photo=photo).update(photo_file_id=file_id)


# --- helpers ----------------------------------------------------------------------------------
def _apply(post: Post, changes: PostChanges) -> None:
    """Change an unpublished post in place (validated); call under its lock."""
    if changes.text is not None:
        post.text = changes.text
    if changes.buttons is not None:
        post.buttons = changes.buttons
    if changes.channel is not None:
        post.channel = changes.channel
    if changes.silent is not None:
        post.silent = changes.silent
    if changes.pin is not None:
        post.pin = changes.pin
    if changes.poll_question is not None:
        post.poll_question = changes.poll_question
    if changes.poll_options is not None:
        post.poll_options = changes.poll_options
    if changes.poll_type is not None:
        post.poll_type = changes.poll_type
    if changes.poll_options is not None or changes.poll_type is not None:
        post.poll_correct_option = changes.poll_correct_option
    if changes.poll_explanation is not None:
        post.poll_explanation = changes.poll_explanation
    if changes.also_to is not None:
        post.also_to = changes.also_to
    if changes.album is not None:
        post.album = changes.album
    if changes.remove_photo:
        post.photo, post.photo_file_id = None, ""
    if changes.photo is not None:
        post.photo, post.photo_file_id = changes.photo, ""
    post.full_clean(exclude=["status", "source_update_id"])
    post.updated_at = timezone.now()
    post.save()


def _schedule(post: Post, publish_at: datetime) -> None:
    """Status scheduled at ``publish_at`` and the job set to it; call under the post's lock.
    A recurring post's job is its next occurrence's (``content.recur``), at its first
    occurrence from ``publish_at``."""
    if post.repeat:
        publish_at = _first_occurrence(post, publish_at)
    post.status, post.publish_at = PostStatus.SCHEDULED, publish_at
    post.outcome_unknown, post.last_error = False, ""
    post.updated_at = timezone.now()
    post.save(
        update_fields=[
            "status",
            "publish_at",
            "delete_at",
            "unpin_at",
            "outcome_unknown",
            "last_error",
            "repeat_zone",
            "updated_at",
        ]
    )
    jobs.publish_job_switch(post.pk, recurring=bool(post.repeat))
    if post.repeat:
        jobs.recur_job_set(post.pk, run_at=publish_at)
    else:
        jobs.publish_job_set(post.pk, run_at=publish_at)


def _first_occurrence(post: Post, publish_at: datetime) -> datetime:
    """A recurring post's first occurrence at or after ``publish_at``."""
    assert post.repeat_until is not None  # checked by clean()
    first = recurrence.occurrence_from(
        every=post.repeat,
        first=publish_at,
        zone_name=post.repeat_zone,
        until=post.repeat_until,
        start=publish_at,
    )
    if first is None:
        raise ValidationError({"repeat_until": _("No occurrence falls before the end date.")})
    return first


def _claim_channel_message(post: Post) -> str:
    """Take the post's attempt token for one call on its channel message; call under its lock.
    A call in flight (or one whose process died before its deadline) blocks others."""
    now = timezone.now()
    if post.attempt_token and post.attempt_deadline is not None and post.attempt_deadline > now:
        raise PostStateError(f"Post #{post.pk} is being changed right now: try again shortly.")
    token = uuid.uuid4().hex
    post.attempt_token = token
    post.attempt_deadline = now + timedelta(seconds=SEND_WINDOW_SECONDS)
    post.save(update_fields=["attempt_token", "attempt_deadline"])
    return token


def _release(post_id: int, token: str) -> None:
    Post.objects.filter(pk=post_id, attempt_token=token).update(
        attempt_token="", attempt_deadline=None
    )
