"""The desk's conversations across deploys: a ``/support`` wait stored by the build before
workflows had versions goes on under this one; one stored by a newer build (a version this one
cannot read) is ended, and the user is asked to start again, nothing crashes."""

from __future__ import annotations

import time
from typing import Any

from support.models import Ticket
from telegram_bot.state import KVStore
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.support.helpers import USER, button, message, texts


def stored(chat_id: int, name: str, step: str, **fields: Any) -> dict[str, Any]:
    """A workflow value as a build stores it (``fields``: ``v``, ``data``...)."""
    return {
        "chat_id": chat_id,
        "user_id": chat_id,
        "name": name,
        "step": step,
        "expires_at_ms": int(time.time() * 1000) + 600_000,
        "revision": 1,
        "data": {},
        **fields,
    }


def test_a_support_wait_stored_before_versions_goes_on(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    memory_store.set(f"workflow:{USER}:{USER}", stored(USER, "support_open", "message"))
    response = post_update(message("The app crashes on start"))
    assert response["X-Update-Outcome"] == "processed"
    ticket = Ticket.objects.get()
    assert ticket.messages.get().text == "The app crashes on start"
    assert texts(bot, USER)[-1].startswith("Ticket #1 opened.")
    assert memory_store.get(f"workflow:{USER}:{USER}") in (None, {"finished": True})


def test_a_support_wait_of_a_newer_version_asks_to_start_again(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    newer = stored(USER, "support_open", "request", v=2, data={"draft": {"parts": []}})
    memory_store.set(f"workflow:{USER}:{USER}", newer)
    response = post_update(message("The app crashes on start"))
    assert response["X-Update-Outcome"] == "processed"
    assert not Ticket.objects.exists()
    assert texts(bot, USER)[-1] == (
        "Your /support request cannot be continued after an update of the bot. Send /support "
        "again to open a ticket."
    )
    # Ended: the next message is a plain one again.
    post_update(message("Hello?"))
    assert texts(bot, USER)[-1].startswith("You have no open support ticket.")
    assert not Ticket.objects.exists()


def test_a_reply_wait_of_a_newer_version_asks_to_press_reply_again(
    bot: FakeTelegramServer, post_update: Any, memory_store: KVStore
) -> None:
    post_update(message("/support My invoice is wrong"))
    ticket = Ticket.objects.get()
    post_update(button(f"sup:reply:{ticket.pk}", user_id=OWNER_ID))
    key = f"workflow:{OWNER_ID}:{OWNER_ID}"
    newer = stored(OWNER_ID, "support_reply", "answer", v=2, data={"ticket": ticket.pk})
    memory_store.set(key, newer)
    post_update(message("Fixed, sorry.", user_id=OWNER_ID))
    assert not ticket.messages.filter(sender="admin").exists()
    assert texts(bot, USER) == [texts(bot, USER)[0]]  # only the confirmation
    assert texts(bot, OWNER_ID)[-1] == (
        "Your answer cannot be taken after an update of the bot. Press Reply on the ticket again."
    )
    assert memory_store.get(key) in (None, {"finished": True})
