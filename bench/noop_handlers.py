"""The baseline of the throughput benchmark: group messages routed to a handler that does
nothing, so the bare pipeline (parse, idempotency claim and done-marker, routing) is measured."""

from __future__ import annotations

from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import Route


def noop(ctx: Context) -> None:
    return None


ROUTES = [Route.on_update("message", noop, chat_types=("group", "supergroup"))]
