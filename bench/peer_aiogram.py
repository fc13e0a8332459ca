"""The peer: the group-message counting job on aiogram 3, served the way its documentation
sets up a webhook (aiohttp, ``SimpleRequestHandler`` with a secret token), answering after the
handler ran (``handle_in_background=False``, as our webhook does).

Each group message is counted once into the same Redis as the product: one Lua script claims
the update id and adds the message, its words and its UTC hour to per (chat, day, member)
counters and the chat's daily total, under the key prefix ``peer:``. Runs in its own venv
(``bench/.venv-peer``, from ``bench/requirements-peer.lock``); ``bench/run.py`` starts it:

    bench/.venv-peer/bin/python bench/peer_aiogram.py --port 8090 --redis redis://127.0.0.1:6379/5
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from aiogram import Bot, Dispatcher, F, Router
from aiogram.types import Message, Update
from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application
from aiohttp import web
from redis.asyncio import Redis

# KEYS: claim, member messages, member words, member hour, chat total. ARGV: words, ttl ms.
COUNT = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[2]) then return 0 end
redis.call('INCRBY', KEYS[2], 1)
redis.call('INCRBY', KEYS[3], ARGV[1])
redis.call('INCRBY', KEYS[4], 1)
redis.call('INCRBY', KEYS[5], 1)
return 1
"""
TTL_MS = 2 * 86_400_000
router = Router()


@router.message(F.chat.type.in_({"group", "supergroup"}))
async def count_message(message: Message, event_update: Update, counter: object) -> None:
    sent = message.date.astimezone(UTC) if message.date.tzinfo else message.date
    day, hour = sent.date().isoformat(), sent.hour
    chat, user = message.chat.id, message.from_user.id if message.from_user else 0
    text = message.text or message.caption or ""
    words = sum(1 for token in text.split() if any(ch.isalnum() for ch in token))
    member = f"peer:{chat}:{day}:{user}"
    await counter(  # type: ignore[operator]
        keys=[
            f"peer:upd:{event_update.update_id}",
            f"{member}:messages",
            f"{member}:words",
            f"{member}:hour:{hour:02d}",
            f"peer:activity:{chat}:{day}",
        ],
        args=[words, TTL_MS],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    parser.add_argument("--secret", default="bench-secret")
    parser.add_argument("--token", default="123456789:AAFakeTokenForTestsOnly_0123456789abcdef")
    args = parser.parse_args()

    redis = Redis.from_url(args.redis)
    dispatcher = Dispatcher(counter=redis.register_script(COUNT))
    dispatcher.include_router(router)
    bot = Bot(token=args.token)
    app = web.Application()
    SimpleRequestHandler(
        dispatcher=dispatcher, bot=bot, secret_token=args.secret, handle_in_background=False
    ).register(app, path="/telegram/webhook")
    setup_application(app, dispatcher, bot=bot)
    print(f"aiogram peer on {args.host}:{args.port} at {datetime.now(UTC):%H:%M:%S}", flush=True)
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
