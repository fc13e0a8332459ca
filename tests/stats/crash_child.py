"""A web process for tests/stats/test_crash.py: posts updates to the webhook, one by one, and
kills itself with SIGKILL right after the KV commit of one chosen update, before its
database add commits (the live writer's transaction), or right after one update's answer.

Run as ``python -m tests.stats.crash_child`` with DJANGO_SETTINGS_MODULE and DATABASE_URL of
the test database; ``STATS_CHILD_KV_URL`` / ``STATS_CHILD_KV_PREFIX`` name the shared KV store,
``STATS_CHILD_KILL_AT`` the update id (or nothing); ``STATS_CHILD_KILL_AFTER_ANSWER`` an
update after whose answer it kills itself, with ``STATS_CHILD_NO_FLUSHER`` keeping every add in
the write-behind's epoch until the process ends. Updates come as a JSON list on stdin; prints
``<update_id> <outcome>`` per update answered. A 503 (the update is claimed by a process that
died) is retried, as Telegram does.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any


def main() -> None:
    import django

    django.setup()
    from django.test import Client

    import stats.services as services
    from telegram_bot.state import open_store, override_store

    store = open_store(
        os.environ["STATS_CHILD_KV_URL"], prefix=os.environ.get("STATS_CHILD_KV_PREFIX", "")
    )
    kill_at = int(os.environ.get("STATS_CHILD_KILL_AT") or 0)
    kill_after = int(os.environ.get("STATS_CHILD_KILL_AFTER_ANSWER") or 0)
    current = {"update_id": 0}
    real_count_once = services.count_once

    def count_once_or_die(*, store: Any, commit: Any, rows: Any) -> bool:
        def commit_then_die() -> bool:
            applied = commit()
            # Only once it applied: a one step that met the flood trigger committed nothing
            # (it left a claim, and the commit comes again, the ordinary way).
            if applied and current["update_id"] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)  # the KV commit is done, the add is not
            return bool(applied)

        return real_count_once(store=store, commit=commit_then_die, rows=rows)

    services.count_once = count_once_or_die
    if os.environ.get("STATS_CHILD_NO_FLUSHER"):
        from stats import write_behind

        write_behind.WriteBehind._run = lambda self: None  # type: ignore[method-assign]
    updates = json.load(sys.stdin)
    client = Client()
    with override_store(store):
        for update in updates:
            current["update_id"] = update["update_id"]
            while True:
                response = client.post(
                    "/telegram/webhook",
                    data=json.dumps(update),
                    content_type="application/json",
                    HTTP_X_TELEGRAM_BOT_API_SECRET_TOKEN=os.environ["TELEGRAM_WEBHOOK_SECRET"],
                )
                if response.status_code != 503:
                    break
                # A killed process's claim on the update: Telegram tries again later.
                time.sleep(0.25)
            print(update["update_id"], response["X-Update-Outcome"], flush=True)
            if current["update_id"] == kill_after:
                # Answered, and its database add still pending in the write-behind's epoch.
                os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
