"""The overview's "Today by chat" page (the messages card opens it): every app's today-so-far
figures (``FeatureConfig.chat_figures``: messages here, joins and leaves...) split by chat,
each against yesterday up to the same time, each number a link to the list of exactly what it
counts. Chats by title, the most active first. Days are the ``TIME_ZONE`` setting's, as on the
overview's cards."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from telegram_bot import features
from telegram_bot.ops.zones import zone_name
from telegram_bot.overview import chat_figures, local_today, versus_yesterday


@require_GET
def today_by_chat(request: HttpRequest) -> HttpResponse:
    figures = chat_figures(request.user)
    chat_ids = {chat_id for figure in figures for chat_id in figure.counts}
    titles = features.chat_titles(chat_ids)

    def activity(chat_id: int) -> tuple[int, ...]:
        return tuple(
            -(figure.counts[chat_id].today if chat_id in figure.counts else 0) for figure in figures
        )

    rows = []
    for chat_id in sorted(chat_ids, key=lambda chat: (activity(chat), chat)):
        cells = []
        for figure in figures:
            count = figure.counts.get(chat_id)
            cells.append(
                {
                    "key": figure.key,
                    "today": count.today if count else 0,
                    "detail": versus_yesterday(count.today, count.yesterday) if count else "",
                    "url": count.url if count else "",
                }
            )
        rows.append({"chat_id": chat_id, "title": titles.get(chat_id, ""), "cells": cells})
    context = {
        **admin.site.each_context(request),
        "title": _("Today by chat"),
        "figures": figures,
        "rows": rows,
        "today": local_today(),
        "zone": zone_name(),
    }
    return render(request, "stats/today_by_chat.html", context)
