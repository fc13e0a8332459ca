"""The group-message path with a chat's rules against the same path without any, in one run.

Chats holding every lock kind (23), 27 allowed link domains, 200 blocklist entries, 100 notes
and 100 filters (words, phrases and wildcards that the bench's messages do not hold) against
chats holding none; the
same unique group messages through the webhook (the web worker's WSGI application, the whole
pipeline with statistics counting), rounds alternating between the two. Rates are per second
of this process's CPU time; the figure is the ratio (with rules / without), which #40 wants
within 10 %.

    python bench/rules_path.py [--messages 400] [--rounds 5] [--kv memory|db|redis]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings_test")
RULED = range(-1005, -1000)  # the chats of update_path.make_updates
PLAIN_OFFSET = -100  # the same messages in chats without rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kv", choices=("memory", "db", "redis"), default="memory")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import override_settings, setup_test_environment

    from bench.stats_throughput import cleanup_kv, open_kv

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    store = open_kv(args.kv)
    try:
        with override_settings(ROOT_URLCONF="bench.urls", ALLOWED_HOSTS=["*"]):
            run(args, store)
    finally:
        from stats import write_behind

        write_behind.shutdown()
        cleanup_kv(store)
        connection.creation.destroy_test_db(old_name, verbosity=0)


def run(args: argparse.Namespace, store: Any) -> None:
    from django.conf import settings

    from bench.update_path import SECRET_HEADER, WsgiClient, make_updates, rate
    from moderation.models import ChatSettings
    from telegram_bot.state import override_store

    for chat_id in [*RULED, *(c + PLAIN_OFFSET for c in RULED)]:
        ChatSettings.objects.update_or_create(
            chat_id=chat_id, defaults={"flood_messages": 100, "flood_seconds": 2}
        )
    for chat_id in RULED:
        fill_rules(chat_id)
    client = WsgiClient()
    headers = {SECRET_HEADER: settings.TELEGRAM_WEBHOOK_SECRET}
    ruled, plain = [], []
    with override_store(store):
        for round_no in range(args.rounds):
            updates = make_updates(args.messages, 1 + round_no)
            ruled.append(rate(client, "/telegram/webhook", bodies(updates, 0), headers))
            updates = make_updates(args.messages, 60 + round_no)
            plain.append(rate(client, "/telegram/webhook", bodies(updates, PLAIN_OFFSET), headers))
    with_rules, without = statistics.median(ruled), statistics.median(plain)
    print(f"rules path: KV {args.kv}, {args.rounds} rounds x {args.messages} group messages")
    print(f"  chats without rules           {without:8.0f} updates/CPU-s")
    print("  chats with 23 locks, 27 domains, 200 blocklist entries, 100 notes, 100 filters")
    print(f"                                {with_rules:8.0f} updates/CPU-s"
          f"   ratio {with_rules / without:.3f}")  # fmt: skip


def bodies(updates: list[dict[str, Any]], offset: int) -> list[str]:
    for update in updates:
        chat = update["message"]["chat"]
        chat["id"] += offset
    return [json.dumps(update) for update in updates]


def fill_rules(chat_id: int) -> None:
    from moderation.rules.blocklist import normalise
    from moderation.rules.kinds import KINDS
    from moderation.rules.models import AllowedDomain, BlocklistEntry, Filter, Lock, Note

    Lock.objects.bulk_create([Lock(chat_id=chat_id, kind=kind) for kind in KINDS])
    AllowedDomain.objects.bulk_create(
        [AllowedDomain(chat_id=chat_id, domain=f"site{n}.example") for n in range(27)]
    )
    patterns = [f"word{n}" for n in range(100)]
    patterns += [f"two words{n}" for n in range(50)]
    patterns += [f"stem{n}*" for n in range(30)]
    patterns += [f"*inside{n}*" for n in range(20)]
    BlocklistEntry.objects.bulk_create(
        [BlocklistEntry(chat_id=chat_id, pattern=normalise(p)) for p in patterns]
    )
    Note.objects.bulk_create(
        [Note(chat_id=chat_id, name=f"note{n}", text="saved") for n in range(100)]
    )
    keywords = [f"key{n}" for n in range(60)] + [f"say key{n}" for n in range(30)]
    keywords += [f"*kw{n}*" for n in range(10)]
    Filter.objects.bulk_create(
        [Filter(chat_id=chat_id, keyword=normalise(k), text="answer") for k in keywords]
    )


if __name__ == "__main__":
    main()
