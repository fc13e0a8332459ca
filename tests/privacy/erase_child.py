"""An erasure process for tests/privacy/test_crash.py that stops half-way and waits to be
killed: ``PRIVACY_CHILD_STOP`` says where (``after_day``: after the first (chat, day) of the
statistics moved and committed; ``mid_day``: inside one, after its KV counters moved and
before its database commit). Prints ``stopped`` when it is there.

Run as ``python -m tests.privacy.erase_child <user id>`` with DJANGO_SETTINGS_MODULE and
DATABASE_URL of the test database; ``PRIVACY_CHILD_KV_URL`` / ``PRIVACY_CHILD_KV_PREFIX``
name the shared KV store.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def main() -> None:
    import django

    django.setup()
    import stats.privacy
    from telegram_bot.audit import Actor
    from telegram_bot.privacy import erase_user
    from telegram_bot.state import open_store, override_store

    def stop() -> None:
        print("stopped", flush=True)
        time.sleep(120)

    if os.environ["PRIVACY_CHILD_STOP"] == "after_day":
        real_move = stats.privacy.move_day

        def move_then_stop(*args: Any) -> int:
            moved = real_move(*args)
            stop()
            return moved

        stats.privacy.move_day = move_then_stop  # type: ignore[assignment]
    else:
        stats.privacy._rename_failed = lambda *args: stop()  # type: ignore[assignment]

    store = open_store(
        os.environ["PRIVACY_CHILD_KV_URL"], prefix=os.environ.get("PRIVACY_CHILD_KV_PREFIX", "")
    )
    with override_store(store):
        erase_user(int(sys.argv[1]), actor=Actor(None, "child"), source="admin")
    print("finished", flush=True)


if __name__ == "__main__":
    main()
