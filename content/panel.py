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

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

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

STATUS_NAMES = {
    PostStatus.DRAFT: gettext_lazy("draft"),
    PostStatus.SCHEDULED: gettext_lazy("scheduled"),
    PostStatus.PUBLISHING: gettext_lazy("publishing"),
    PostStatus.PUBLISHED: gettext_lazy("published"),
    PostStatus.FAILED: gettext_lazy("failed"),
    PostStatus.ARCHIVED: gettext_lazy("archived"),
}

ASK_CHANNEL = gettext_lazy("New post. Which channel? Send its @username or its id (-100…).")
ASK_CONTENT = gettext_lazy(
    "Send the post: a text (up to 4096 characters), or a photo with a caption (up to 1024)."
)
ASK_BUTTONS = gettext_lazy(
    "Buttons under the post? Send one row per line, each button as 'Label | https://…', "
    "several in a row separated by '&&'. Or press Skip."
)
ASK_TIME = gettext_lazy("When? Send a UTC time like 2026-12-01 18:00, or +2h, +30m, +1d.")
ASK_TEXT = gettext_lazy("Send the new text (a photo's caption: up to 1024 characters).")
EXPIRED = gettext_lazy("This has expired. Start again from /panel.")
UNREADABLE = gettext_lazy(
    "This cannot be continued after an update of the bot. Start again from /panel."
)


def button(text: str, data: str) -> dict[str, str]:
    return {"text": text, "callback_data": data}


def keyboard(*rows: list[dict[str, str]]) -> Markup:
    return {"inline_keyboard": [row for row in rows if row]}


def when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def status_label(post: Post) -> str:
    status = PostStatus(post.status)
    label = f"{STATUS_ICONS.get(status, '')} {STATUS_NAMES[status]}".strip()
    return _("%(status)s (outcome unknown)") % {"status": label} if post.needs_review else label


# --- list -------------------------------------------------------------------------------------
def list_view(posts: list[Post], *, page: int, has_next: bool) -> tuple[str, Markup]:
    if not posts and page == 0:
        text = _("No channel posts yet.")
    else:
        text = _("Channel posts, page %(page)s. Tap one to open it.") % {"page": page + 1}
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
        nav.append(button(_("« Newer"), f"content:list:{page - 1}"))
    if has_next:
        nav.append(button(_("Older »"), f"content:list:{page + 1}"))
    return text, keyboard(
        *rows, nav, [button(_("New post"), "content:new"), button(_("« Panel"), "panel:home")]
    )


# --- one post ---------------------------------------------------------------------------------
def post_view(post: Post) -> tuple[str, Markup]:
    lines = [
        _("Post #%(id)s: %(status)s") % {"id": post.pk, "status": status_label(post)},
        _("Channel: %(channel)s") % {"channel": post.channel},
        (_("Kind: photo") if post.has_photo else _("Kind: text")) + _buttons_count(post),
    ]
    if post.status in (PostStatus.SCHEDULED, PostStatus.PUBLISHING):
        lines.append(_("Publish at: %(when)s") % {"when": when(post.publish_at)})
    if post.channel_message_id is not None:
        lines.append(
            _("Channel message: %(id)s, %(when)s")
            % {"id": post.channel_message_id, "when": when(post.published_at)}
        )
    elif post.status == PostStatus.PUBLISHED:
        lines.append(_("Published: %(when)s") % {"when": when(post.published_at)})
    if post.last_error:
        lines.append(_("Last error: %(error)s") % {"error": post.last_error[:300]})
    snippet = post.text if len(post.text) <= 500 else post.text[:499] + "…"
    lines += ["", snippet or _("(no text)")]
    return "\n".join(lines), keyboard(*_actions(post), [button(_("« Posts"), "content:list:0")])


def _buttons_count(post: Post) -> str:
    if not post.buttons:
        return ""
    count = sum(len(row) for row in post.buttons)
    return ngettext(", %(count)d button", ", %(count)d buttons", count) % {"count": count}


def _actions(post: Post) -> list[list[dict[str, str]]]:
    pk = post.pk
    preview = button(_("Preview"), f"content:pre:{pk}")
    edits = [
        button(_("Edit text"), f"content:edit:{pk}"),
        button(_("Edit buttons"), f"content:btn:{pk}"),
    ]
    if post.needs_review:
        return [
            [button(_("It is in the channel"), f"content:ok:{pk}")],
            [button(_("Publish again"), f"content:pub:{pk}"), preview],
            edits,
            [button(_("Archive"), f"content:arch:{pk}")],
        ]
    if post.status in UNPUBLISHED:
        schedule = _("Reschedule…") if post.status == PostStatus.SCHEDULED else _("Schedule…")
        rows = [
            [preview, button(_("Publish now"), f"content:pub:{pk}")],
            [button(schedule, f"content:sched:{pk}")],
            edits,
        ]
        last = [button(_("Archive"), f"content:arch:{pk}")]
        if post.status == PostStatus.SCHEDULED:
            rows[1].append(button(_("Back to draft"), f"content:unsched:{pk}"))
        if post.status == PostStatus.DRAFT:
            last.append(button(_("Delete"), f"content:del:{pk}"))
        return [*rows, last]
    if post.status == PostStatus.PUBLISHING:
        return [[button(_("Refresh"), f"content:view:{pk}")]]
    if post.status == PostStatus.PUBLISHED:
        return [
            [preview],
            edits,
            [
                button(_("Archive"), f"content:arch:{pk}"),
                button(_("Archive + delete message"), f"content:archdel:{pk}"),
            ],
        ]
    return []


def confirm_delete_view(post: Post) -> tuple[str, Markup]:
    return (
        _("Archive post #%(id)s and delete its message from %(channel)s? This cannot be undone.")
        % {"id": post.pk, "channel": post.channel},
        keyboard(
            [
                button(_("Yes, delete it"), f"content:archdelok:{post.pk}"),
                button(_("No"), f"content:view:{post.pk}"),
            ]
        ),
    )


def preview_controls(post: Post) -> tuple[str, Markup]:
    return (
        _("Above: preview of post #%(id)s for %(channel)s (%(status)s). What now?")
        % {"id": post.pk, "channel": post.channel, "status": STATUS_NAMES[PostStatus(post.status)]},
        keyboard(
            [
                button(_("Publish now"), f"content:pub:{post.pk}"),
                button(_("Schedule…"), f"content:sched:{post.pk}"),
            ],
            [
                button(_("Edit text"), f"content:edit:{post.pk}"),
                button(_("Keep"), f"content:view:{post.pk}"),
            ],
        ),
    )


# --- the creation conversation ----------------------------------------------------------------
def channel_choices(channels: list[str]) -> Markup:
    rows = [[button(channel, f"content:ch:{channel}")] for channel in channels]
    return keyboard(*rows, [button(_("Cancel"), "content:cancel")])


def cancel_only() -> Markup:
    return keyboard([button(_("Cancel"), "content:cancel")])


def skip_or_cancel() -> Markup:
    return keyboard([button(_("Skip"), "content:skip"), button(_("Cancel"), "content:cancel")])


def page_size() -> int:
    return conf.PANEL_PAGE_SIZE
