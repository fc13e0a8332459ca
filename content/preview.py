"""The post form's preview: the message as Telegram will show it in the channel, rendered on
the server from what the form holds, checked by the same rules as a save.

Posts are sent as plain text (no ``parse_mode``), so the only formatting is what Telegram finds
in plain text by itself: links, @mentions and #hashtags become entities, line breaks stay. The
preview shows that, the photo as a placeholder (it is not uploaded to be previewed), a poll's
question and answers, the buttons in their rows, and the publication time in the console's
named zone. The form's page shows it for the saved post and asks ``post_preview_view`` again
(``static/content/post_preview.js``) as the author types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from content import selectors, validation
from content.forms import ButtonsField, PollOptionsField
from content.models import Post
from telegram_bot.numbers import ascii_int
from telegram_bot.ops.zones import ZonedDateTimeField, zoned

# What Telegram makes entities of in a plain text: links (with or without a scheme, t.me
# links included), @usernames (5-32 characters) and #hashtags.
_ENTITY = re.compile(
    r"(?P<url>(?:https?://|tg://)[^\s<>\"']+|(?<![\w@])(?:[a-z0-9-]+\.)+[a-z]{2,}(?:/[^\s<>\"']*)?)"
    r"|(?P<mention>(?<![\w@])@[A-Za-z][A-Za-z0-9_]{4,31})"
    r"|(?P<hashtag>(?<![\w#])#\w+)",
    re.IGNORECASE,
)
_TRAILING = ".,:;!?)]}»"


class PreviewForm(forms.Form):
    """What the post form holds that the preview shows (the photo only as "there is one")."""

    channel = forms.CharField(required=False, max_length=64)
    text = forms.CharField(required=False, strip=False, max_length=20000)
    buttons = ButtonsField(label=gettext_lazy("Buttons"))
    poll_question = forms.CharField(required=False, max_length=2000)
    poll_options = PollOptionsField(label=gettext_lazy("Poll options"))
    publish_at = ZonedDateTimeField(required=False)
    has_photo = forms.BooleanField(required=False)


@dataclass
class Preview:
    """The message as it will read: its channel, text (HTML, escaped, with the entities
    Telegram finds), photo or poll, button rows, when, and what a save would refuse."""

    channel: str = ""
    text: SafeString = field(default_factory=lambda: mark_safe(""))
    photo: bool = False
    poll_question: str = ""
    poll_options: list[str] = field(default_factory=list)
    buttons: list[list[dict[str, str]]] = field(default_factory=list)
    when: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (str(self.text) or self.photo or self.poll_question)


def post_preview(data: dict[str, Any] | None = None, *, post: Post | None = None) -> Preview:
    """The preview of a saved ``post``, or of the form ``data`` (the preview form's fields)."""
    if post is not None:
        return _build(
            channel=post.channel,
            text=post.text,
            buttons=post.buttons,
            poll_question=post.poll_question,
            poll_options=post.poll_options,
            publish_at=post.publish_at,
            has_photo=post.has_photo,
            checked_time=False,
        )
    form = PreviewForm(data or {})
    problems: list[str] = []
    if not form.is_valid():
        problems = [str(message) for messages in form.errors.values() for message in messages]
    cleaned = form.cleaned_data
    return _build(
        channel=cleaned.get("channel") or "",
        text=cleaned.get("text") or "",
        buttons=cleaned.get("buttons") or [],
        poll_question=cleaned.get("poll_question") or "",
        poll_options=cleaned.get("poll_options") or [],
        publish_at=cleaned.get("publish_at"),
        has_photo=bool(cleaned.get("has_photo")),
        checked_time=True,
        problems=problems,
    )


def render_preview(preview: Preview, request: HttpRequest | None = None) -> str:
    return render_to_string("content/post_preview.html", {"preview": preview}, request=request)


@require_POST
def post_preview_view(request: HttpRequest) -> HttpResponse:
    """The preview block of the form as posted (HTML), for the form's page to show. With
    ``post_id``, what the form does not hold (fields a published post no longer lets change)
    is the saved post's."""
    data = request.POST.dict()
    post_id = ascii_int(data.pop("post_id", ""))
    post = selectors.post_find(post_id) if post_id is not None else None
    if post is not None:
        for name, value in _form_values(post).items():
            data.setdefault(name, value)
    return HttpResponse(render_preview(post_preview(data), request))


def _form_values(post: Post) -> dict[str, str]:
    publish_at = ""
    if post.publish_at is not None:
        publish_at = f"{timezone.localtime(post.publish_at):%Y-%m-%dT%H:%M}"
    return {
        "channel": post.channel,
        "text": post.text,
        "buttons": validation.format_buttons(post.buttons),
        "poll_question": post.poll_question,
        "poll_options": "\n".join(post.poll_options),
        "publish_at": publish_at,
    }


def telegram_text(text: str) -> SafeString:
    """``text`` as HTML the way Telegram shows a plain-text message: escaped, line breaks
    kept, links, @mentions and #hashtags marked as Telegram marks them."""
    parts: list[str] = []
    last = 0
    for match in _ENTITY.finditer(text):
        found = match.group(0)
        kind = match.lastgroup or "url"
        cut = len(found.rstrip(_TRAILING)) if kind == "url" else len(found)
        start, end = match.start(), match.start() + cut
        parts.append(escape(text[last:start]))
        parts.append(f'<span class="tg-entity tg-{kind}">{escape(text[start:end])}</span>')
        last = end
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts).replace("\n", "<br>"))  # noqa: S308 - every part escaped


def _build(
    *,
    channel: str,
    text: str,
    buttons: Any,
    poll_question: str,
    poll_options: list[str],
    publish_at: datetime | None,
    has_photo: bool,
    checked_time: bool,
    problems: list[str] | None = None,
) -> Preview:
    problems = list(problems or [])
    checks = [
        lambda: validation.normalize_channel(channel),
        lambda: validation.check_buttons(buttons),
    ]
    if poll_question or poll_options:
        checks.append(
            lambda: validation.check_poll(
                poll_question, poll_options, text=text, has_photo=has_photo
            )
        )
    else:
        checks.append(lambda: validation.check_text(text, has_photo=has_photo))
    if checked_time and publish_at is not None:
        checks.append(lambda: validation.check_publish_at(publish_at))
    for check in checks:
        try:
            check()
        except ValidationError as exc:
            problems.extend(message for message in exc.messages if message not in problems)
    if publish_at is None:
        when = _("Not scheduled: a draft until it is published.")
    else:
        when = _("Will be published at %(when)s.") % {"when": zoned(publish_at)}
    return Preview(
        channel=channel.strip(),
        text=telegram_text(text),
        photo=has_photo,
        poll_question=poll_question,
        poll_options=list(poll_options),
        buttons=[list(row) for row in buttons] if isinstance(buttons, list) else [],
        when=when,
        problems=problems,
    )
