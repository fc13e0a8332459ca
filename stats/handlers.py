"""Telegram handlers of the stats app: count group messages, answer /stats.

``count_message`` observes every group and supergroup message (an observer, so it counts
also what another feature handles; commands are not counted, and edited messages are not
observed, so an edit never counts as a new message). The KV ops of a counted message
are committed with the update's done-marker in one atomic step (``ctx.commit_once``); only when
that step applied them does the live writer add the same increments to the database, under
the day's lock taken before the commit (``stats.services.stats_count_once``).
``/stats`` is an expensive command (the pipeline's stricter rate limit) with a per-chat
cooldown on top.
"""

from __future__ import annotations

import contextlib

from django.utils.translation import gettext_lazy

from stats.services import (
    joins_to_record,
    message_to_count,
    stats_command_cooldown_give_back,
    stats_command_cooldown_take,
    stats_count_once,
)
from stats.summary import group_summary_text
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight, Observer, PanelEntry, Route
from telegram_bot.state import KVStore
from telegram_bot.updates import Update

GROUPS = ("group", "supergroup")


def count_message(ctx: Context) -> None:
    """The declared commit (``foresee_count``, worked out once by the pipeline), through the
    unit's ``commit_once``."""
    work = ctx.foresight.commit if ctx.foresight is not None else None
    if work is not None:
        work(ctx.commit_once)


def foresee_count(update: Update, store: KVStore) -> Foresight:
    """What counting ``update`` takes: its one commit, or nothing (a command, a message that
    does not count). The same whether the pipeline runs the observer or does the update in
    one step (``Observer.foresee``)."""
    message = update.message
    if message is None or update.command() is not None:
        return QUIET
    if message.new_chat_members:
        joined = message
        return Foresight(commit=lambda commit: commit(joins_to_record(joined)))
    counted = message_to_count(message, store=store)
    if counted is None:
        return QUIET
    # The commit and the database add under the day's lock; never raises once the commit is
    # done (a dead letter's replay, which starts the update over, would count twice).
    return Foresight(
        commit=lambda commit: stats_count_once(store=store, counted=counted, commit=commit)
    )


def stats_command(ctx: Context) -> None:
    chat_id = ctx.chat_id
    if chat_id is None:
        return
    token = stats_command_cooldown_take(store=ctx.store, chat_id=chat_id)
    if token is None:
        return
    try:
        ctx.reply(group_summary_text(chat_id=chat_id, store=ctx.store))
    except Exception:
        # Not answered: the cooldown would have the re-delivery (or the dead letter's replay)
        # answer nothing.
        with contextlib.suppress(Exception):
            stats_command_cooldown_give_back(store=ctx.store, chat_id=chat_id, token=token)
        raise


OBSERVERS: list[Observer] = [
    Observer.on(
        "stats.count",
        "message",
        count_message,
        chat_types=GROUPS,
        order=900,
        foresee=foresee_count,
    ),
]
ROUTES: list[Route] = [
    Route.on_command(
        "stats",
        stats_command,
        chat_types=GROUPS,
        expensive=True,
        help=gettext_lazy("today's and this week's most active members (in a group)"),
    ),
]
PANEL_ENTRIES: list[PanelEntry] = []
