"""The channel posts' card on the admin overview: posts due today that are not out yet."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from content.models import Post, PostStatus
from telegram_bot.overview import Card, day_bounds, local_today


def content_cards(user: Any) -> list[Card]:
    """One query: today's scheduled posts in the TIME_ZONE setting, and the next one due."""
    if not user.has_perm("content.view_post"):
        return []
    start, end = day_bounds(local_today())
    due = Post.objects.filter(
        status=PostStatus.SCHEDULED, publish_at__gte=start, publish_at__lt=end
    ).values_list("publish_at", flat=True)
    times = sorted(due)
    now = timezone.now()
    upcoming = [at for at in times if at >= now]
    if upcoming:
        detail = _("next at %(time)s") % {"time": timezone.localtime(upcoming[0]).strftime("%H:%M")}
    else:
        detail = _("none left today") if not times else _("overdue: not published yet")
    changelist = reverse("admin:content_post_changelist")
    return [
        Card(
            key="posts-today",
            order=70,
            title=_("Posts scheduled today"),
            value=f"{len(times):,}",
            detail=detail,
            url=f"{changelist}?"
            + urlencode(
                {
                    "status__exact": PostStatus.SCHEDULED,
                    "publish_at__gte": start.isoformat(),
                    "publish_at__lt": end.isoformat(),
                }
            ),
            alert=bool(times) and not upcoming,
        )
    ]
