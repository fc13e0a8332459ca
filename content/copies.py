"""A post to several channels: its own channel, and a copy of its own in each of ``also_to``.

The copies are made when the post is claimed for publication (``content.publishing``), in the
claim's transaction: each is a post of its own, keyed ``<post id>:<channel>`` (unique), due at
once, published by its own job through the one ``post_publish``. So each channel is published
at most once, with its own outcome (published, failed, outcome unknown) on its own row, and a
claim that is rolled back or retried makes no second copy.
"""

from __future__ import annotations

from datetime import datetime

from content import jobs
from content.models import Post, PostStatus

# What a copy takes from its post (not its channel, its schedule or its other channels).
_COPIED = (
    "text",
    "photo",
    "photo_file_id",
    "album",
    "poll_question",
    "poll_options",
    "poll_type",
    "poll_correct_option",
    "poll_explanation",
    "buttons",
    "silent",
    "pin",
    "unpin_at",
    "delete_at",
    "created_by",
)


def copies_create(post: Post, now: datetime) -> list[Post]:
    """The post's copy in each of its other channels, created once and due now; call under
    the post's lock, in the transaction that claims it."""
    copies = []
    for channel in post.also_to or []:
        key = f"{post.pk}:{channel}"
        existing = Post.objects.filter(copy_key=key).first()
        if existing is not None:
            copies.append(existing)
            continue
        copy = Post(
            **{name: getattr(post, name) for name in _COPIED},
            channel=channel,
            status=PostStatus.SCHEDULED,
            publish_at=now,
            copy_of=post,
            copy_key=key,
        )
        copy.save()
        jobs.publish_job_set(copy.pk, run_at=now)
        copies.append(copy)
    return copies
