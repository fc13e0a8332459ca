"""The admins' notice of a ticket message is claimed before it is sent: a run that stopped
between sending it and recording it is not followed by a second notice. The test failed on the
code before."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from support.models import Ticket, TicketMessage
from tests.conftest import OWNER_ID
from tests.fakes.telegram import FakeTelegramServer
from tests.faults import fail_once_in
from tests.support.helpers import USER, message, sent, texts


# --- (1) support admin notices have no send claim ---------------------------------------------
def test_support_admin_notice_is_not_sent_again_when_recording_it_failed(
    bot: FakeTelegramServer, post_update: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admins got the notice; the database blinks while it is recorded (503): the
    re-delivery must not notify every admin a second time (the user's copy has a claim for
    exactly this; the module promises 'running it again sends nothing twice')."""
    from support import delivery

    fail_once_in(
        monkeypatch, delivery, "entry_admins_notified", OperationalError("database went away")
    )
    update = message("/support please help")
    assert post_update(update).status_code == 503
    assert len(sent(bot, chat_id=OWNER_ID)) == 1
    assert post_update(update)["X-Update-Outcome"] == "processed"
    assert Ticket.objects.count() == 1
    assert len(texts(bot, USER)) == 1  # the user's confirmation: claimed, sent once
    assert len(sent(bot, chat_id=OWNER_ID)) == 1, "the owner was notified twice"
    assert TicketMessage.objects.get().admins_notified_at is not None
