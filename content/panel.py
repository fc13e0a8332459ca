"""What the in-Telegram panel shows for posts: texts and inline keyboards, no side effects.

Callback data (all under ``content:``, at most 64 bytes):
``list:<page>``, ``view:<id>``, ``new``, ``ch:<channel>``, ``skip``, ``cancel``,
``pre:<id>`` (preview), ``pub:<id>`` (publish now), ``sched:<id>`` (ask for a time),
``unsched:<id>``, ``edit:<id>`` (new text), ``btn:<id>`` (new buttons), ``arch:<id>``,
``archdel:<id>`` (asks to confirm) then ``archdelok:<id>``, ``ok:<id>`` (an operator checked
the channel: mark published), ``del:<id>`` (delete a draft).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from content import conf
from content.models import UNPUBLISHED, Post, PostStatus

Markup = dict[str, Any]

STATUS_ICONS = {
    PostStatus.DRAFT: "📝",
    PostStatus.SCHEDULED: "⏰",
    PostStatus.PUBLISHING: "⏳",
    PostStatus.PUBLISHED: "✅",
    PostStatus.FAILED: "⚠️",
    PostStatus.ARCHIVED: "🗄",
}

ASK_CHANNEL = "New post. Which channel? Send its @username or its id (-100…)."
ASK_CONTENT = (
    "Send the post: a text (up to 4096 characters), or a photo with a caption (up to 1024)."
)
ASK_BUTTONS = (
    "Buttons under the post? Send one row per line, each button as 'Label | https://…', "
    "several in a row separated by '&&'. Or press Skip."
)
ASK_TIME = "When? Send a UTC time like 2026-12-01 18:00, or +2h, +30m, +1d."
ASK_TEXT = "Send the new text (a photo's caption: up to 1024 characters)."
EXPIRED = "This has expired. Start again from /panel."


def button(text: str, data: str) -> dict[str, str]:
    return {"text": text, "callback_data": data}


def keyboard(*rows: list[dict[str, str]]) -> Markup:
    return {"inline_keyboard": [row for row in rows if row]}


def when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def status_label(post: Post) -> str:
    label = f"{STATUS_ICONS.get(PostStatus(post.status), '')} {post.status}".strip()
    return f"{label} (outcome unknown)" if post.needs_review else label


# --- list -------------------------------------------------------------------------------------
def list_view(posts: list[Post], *, page: int, has_next: bool) -> tuple[str, Markup]:
    if not posts and page == 0:
        text = "No channel posts yet."
    else:
        text = f"Channel posts, page {page + 1}. Tap one to open it."
    rows = [
        [
            button(
                f"#{post.pk} {STATUS_ICONS.get(PostStatus(post.status), '')} {post.summary}",
                f"content:view:{post.pk}",
            )
        ]
        for post in posts
    ]
    nav = []
    if page > 0:
        nav.append(button("« Newer", f"content:list:{page - 1}"))
    if has_next:
        nav.append(button("Older »", f"content:list:{page + 1}"))
    return text, keyboard(
        *rows, nav, [button("New post", "content:new"), button("« Panel", "panel:home")]
    )


# --- one post ---------------------------------------------------------------------------------
def post_view(post: Post) -> tuple[str, Markup]:
    lines = [
        f"Post #{post.pk}: {status_label(post)}",
        f"Channel: {post.channel}",
        f"Kind: {'photo' if post.has_photo else 'text'}"
        + (f", {sum(len(row) for row in post.buttons)} button(s)" if post.buttons else ""),
    ]
    if post.status in (PostStatus.SCHEDULED, PostStatus.PUBLISHING):
        lines.append(f"Publish at: {when(post.publish_at)}")
    if post.channel_message_id is not None:
        lines.append(f"Channel message: {post.channel_message_id}, {when(post.published_at)}")
    elif post.status == PostStatus.PUBLISHED:
        lines.append(f"Published: {when(post.published_at)}")
    if post.last_error:
        lines.append(f"Last error: {post.last_error[:300]}")
    snippet = post.text if len(post.text) <= 500 else post.text[:499] + "…"
    lines += ["", snippet or "(no text)"]
    return "\n".join(lines), keyboard(*_actions(post), [button("« Posts", "content:list:0")])


def _actions(post: Post) -> list[list[dict[str, str]]]:
    pk = post.pk
    preview = button("Preview", f"content:pre:{pk}")
    edits = [button("Edit text", f"content:edit:{pk}"), button("Edit buttons", f"content:btn:{pk}")]
    if post.needs_review:
        return [
            [button("It is in the channel", f"content:ok:{pk}")],
            [button("Publish again", f"content:pub:{pk}"), preview],
            edits,
            [button("Archive", f"content:arch:{pk}")],
        ]
    if post.status in UNPUBLISHED:
        schedule = "Reschedule…" if post.status == PostStatus.SCHEDULED else "Schedule…"
        rows = [
            [preview, button("Publish now", f"content:pub:{pk}")],
            [button(schedule, f"content:sched:{pk}")],
            edits,
        ]
        last = [button("Archive", f"content:arch:{pk}")]
        if post.status == PostStatus.SCHEDULED:
            rows[1].append(button("Back to draft", f"content:unsched:{pk}"))
        if post.status == PostStatus.DRAFT:
            last.append(button("Delete", f"content:del:{pk}"))
        return [*rows, last]
    if post.status == PostStatus.PUBLISHING:
        return [[button("Refresh", f"content:view:{pk}")]]
    if post.status == PostStatus.PUBLISHED:
        return [
            [preview],
            edits,
            [
                button("Archive", f"content:arch:{pk}"),
                button("Archive + delete message", f"content:archdel:{pk}"),
            ],
        ]
    return []


def confirm_delete_view(post: Post) -> tuple[str, Markup]:
    return (
        f"Archive post #{post.pk} and delete its message from {post.channel}? This cannot be "
        "undone.",
        keyboard(
            [
                button("Yes, delete it", f"content:archdelok:{post.pk}"),
                button("No", f"content:view:{post.pk}"),
            ]
        ),
    )


def preview_controls(post: Post) -> tuple[str, Markup]:
    return (
        f"Above: preview of post #{post.pk} for {post.channel} ({post.status}). What now?",
        keyboard(
            [
                button("Publish now", f"content:pub:{post.pk}"),
                button("Schedule…", f"content:sched:{post.pk}"),
            ],
            [
                button("Edit text", f"content:edit:{post.pk}"),
                button("Keep", f"content:view:{post.pk}"),
            ],
        ),
    )


# --- the creation conversation ----------------------------------------------------------------
def channel_choices(channels: list[str]) -> Markup:
    rows = [[button(channel, f"content:ch:{channel}")] for channel in channels]
    return keyboard(*rows, [button("Cancel", "content:cancel")])


def cancel_only() -> Markup:
    return keyboard([button("Cancel", "content:cancel")])


def skip_or_cancel() -> Markup:
    return keyboard([button("Skip", "content:skip"), button("Cancel", "content:cancel")])


def page_size() -> int:
    return conf.PANEL_PAGE_SIZE
