"""Erasure and export: a message in flight during an erasure, an
audit entry whose words name the id, another member's pending moderation, and an admin's
export of other people's join requests."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from community.models import ChatPolicy
from community.services import join_requests
from support import delivery
from support import services as support_services
from support.models import Ticket, TicketBotMessage, TicketMessage
from support.privacy import purge as support_purge
from support.services import Author, Origin
from support.validation import Content
from telegram_bot import privacy
from telegram_bot.audit import Actor
from telegram_bot.jobs.models import Job, JobStatus
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.privacy import ErasureDeferred, erase_user, export_user, is_anonymous
from telegram_bot.state import KVStore
from tests.builders import make_join_request_update, make_message_update
from tests.community.helpers import question_policy
from tests.fakes.telegram import FakeTelegramServer
from tests.privacy.seed import OTHER, USER, person

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR = Actor(None, "site:operator")
CHAT = -100111


def private(text: str) -> dict[str, Any]:
    update = make_message_update(text, chat_id=USER, user_id=USER)
    update["message"]["from"] = person(USER)
    return update


def test_a_message_in_flight_during_the_erasure_does_not_land_in_the_erased_ticket(
    store: KVStore, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    process_update(private("/support Help me please"))
    real = support_services.ticket_add_user_message

    def erase_meanwhile(**kwargs: Any) -> Any:  # the erasure commits after the ticket's lookup
        erase_user(USER, actor=OPERATOR, source="admin")
        return real(**kwargs)

    monkeypatch.setattr(support_services, "ticket_add_user_message", erase_meanwhile)
    process_update(private("my phone is 555-0199"))
    monkeypatch.undo()
    assert not TicketMessage.objects.filter(text__contains="555-0199").exists()
    [ticket] = Ticket.objects.all()
    assert is_anonymous(ticket.user_id)


def test_the_retention_purge_also_empties_an_erased_ticket_that_holds_content(
    store: KVStore, settings: Any
) -> None:
    process_update(private("/support Help me please"))
    erase_user(USER, actor=OPERATOR, source="admin")
    ticket = Ticket.objects.get()
    TicketMessage.objects.filter(ticket=ticket).update(text="left behind somehow")
    Ticket.objects.filter(pk=ticket.pk).update(
        status=Ticket.Status.CLOSED, closed_at="2000-01-01T00:00:00Z"
    )
    assert support_purge(store) == {"tickets": 1}
    assert not TicketMessage.objects.exclude(text="").exists()


def test_an_audit_entry_whose_words_name_the_id_loses_them(
    store: KVStore, admin_client: Any
) -> None:
    admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": str(USER), "time_zone": "Europe/Moscow", "language": "ru"},
    )
    erase_user(USER, actor=OPERATOR, source="admin")
    entry = AuditEntry.objects.get(action="chatpreference.add")
    assert is_anonymous(entry.chat_id)
    assert str(USER) not in entry.target_name + entry.detail + entry.reason


def moderation_job(user_id: int, actor_id: int, update_id: int, action: str = "ban") -> Job:
    """A ``moderation.act`` job waiting out Telegram's rate limit, as ``_retry_later`` makes."""
    payload = {
        "chat_id": CHAT,
        "actor_id": actor_id,
        "actor_name": "Zebulon" if actor_id == USER else "Olga",
        "source": "command",
        "update_id": update_id,
        "action": action,
        "user_id": user_id,
        "name": "someone",
        "seconds": None,
        "reason": "spam",
    }
    key = f"mod:{CHAT}:{update_id}:{action}:{user_id}"
    return Job.objects.create(kind="moderation.act", payload=payload, dedupe_key=key)


def test_erasing_a_moderator_keeps_their_pending_ban_of_another_member(store: KVStore) -> None:
    theirs = moderation_job(OTHER, USER, 42)  # the erased moderator's ban of another member
    erase_user(USER, actor=OPERATOR, source="admin")
    theirs.refresh_from_db()
    assert theirs.payload["user_id"] == OTHER and is_anonymous(theirs.payload["actor_id"])
    assert theirs.payload["actor_name"] == ""


@pytest.mark.parametrize("action", ["ban", "unban"])
def test_a_pending_action_about_the_member_defers_their_erasure(
    store: KVStore, action: str
) -> None:
    """Erasing deletes the jobs about the person: a member whose ban waits out Telegram's
    rate limit would escape it by /forgetme (and one whose unban waits would stay banned)."""
    about = moderation_job(USER, OTHER, 43, action)
    BotAdmin.objects.create(telegram_id=USER, display_name="Zebulon")
    with pytest.raises(
        ErasureDeferred, match=f"moderation action about this member \\({action}\\)"
    ):
        erase_user(USER, actor=OPERATOR, source="admin")
    assert Job.objects.filter(pk=about.pk).exists()  # nothing was erased
    assert BotAdmin.objects.filter(telegram_id=USER).exists()
    assert not list(store.scan_all("lock:erase:"))  # no run was started

    Job.objects.filter(pk=about.pk).update(status=JobStatus.SUCCEEDED)  # the job ran
    erase_user(USER, actor=OPERATOR, source="admin")
    assert not Job.objects.filter(pk=about.pk).exists()
    assert not BotAdmin.objects.filter(telegram_id=USER).exists()


def test_an_admins_export_holds_their_part_of_other_peoples_join_requests_only(
    store: KVStore,
) -> None:
    BotAdmin.objects.create(telegram_id=USER, display_name="Zebulon")
    ChatPolicy.objects.create(chat_id=CHAT)
    join = make_join_request_update(user_id=OTHER, chat_id=CHAT, bio="Olga, nurse in Riga")
    join["chat_join_request"]["from"] = person(OTHER)
    process_update(join)
    section = export_user(USER)["apps"]["community"]
    assert "nurse in Riga" not in repr(section) and str(OTHER) not in repr(section)
    assert section["join_requests"] == []
    [part] = section["join_requests_handled"]
    assert part["chat_id"] == CHAT and [copy[0] for copy in part["copies"]] == [USER]
    requester = export_user(OTHER)["apps"]["community"]
    [record] = requester["join_requests"]
    assert "nurse in Riga" in record["summary"]


def test_an_answer_delivered_during_the_erasure_does_not_link_the_chat_to_the_ticket(
    store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    process_update(private("/support Help me please"))
    ticket = Ticket.objects.get(user_id=USER)
    real = delivery._send_user_message

    def erase_then_send(*args: Any, **kwargs: Any) -> Any:
        erase_user(USER, actor=OPERATOR, source="admin")
        return real(*args, **kwargs)

    monkeypatch.setattr(delivery, "_send_user_message", erase_then_send)
    support_services.admin_reply(
        ticket_id=ticket.pk,
        author=Author("site:ann"),
        origin=Origin(form_token=uuid.uuid4()),
        content=Content(kind="text", text="Here is the answer"),
    )
    monkeypatch.undo()
    assert not TicketBotMessage.objects.filter(chat_id=USER).exists()


# --- a join request received while its requester is erased ---------------------------------
def question_join(store: KVStore) -> dict[str, Any]:
    question_policy(CHAT)
    join = make_join_request_update(user_id=USER, chat_id=CHAT, bio="Zebulon, baker in Oslo")
    join["chat_join_request"]["from"] = person(USER)
    return join


def left_behind(store: KVStore) -> list[str]:
    """The KV keys that still name the erased requester (the join request's three)."""
    return sorted(
        key
        for prefix in ("jr:", "workflow:")
        for key in store.scan_all(prefix)
        if str(USER) in key or str(USER) in repr(store.get(key))
    )


def questions(bot: FakeTelegramServer) -> list[Any]:
    return [c for c in bot.calls_to("sendMessage") if c.params["chat_id"] == USER]


def test_an_erasure_that_runs_between_two_writes_of_a_join_request_leaves_nothing(
    store: KVStore, fake_telegram: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure deletes the record written first and finishes before the newest-request
    index and the question's workflow are written: before, both stayed (7 days and the
    question's timeout) and the question went out."""
    join = question_join(store)
    real = join_requests._become_newest

    def erase_then_index(record: Any) -> bool:
        erase_user(USER, actor=OPERATOR, source="admin")
        return real(record)

    monkeypatch.setattr(join_requests, "_become_newest", erase_then_index)
    assert process_update(join) == Outcome.PROCESSED
    assert left_behind(store) == []
    assert questions(fake_telegram) == []
    assert not Job.objects.filter(status=JobStatus.QUEUED).exists()


def test_a_join_request_received_while_the_erasure_runs_takes_its_own_keys_back(
    store: KVStore, fake_telegram: FakeTelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real threads: the erasure has scanned every app and not finished when the request
    arrives; the request's writes come after the scans, so only the request can undo them."""
    join = question_join(store)
    scanned, go_on = threading.Event(), threading.Event()
    real_finish = privacy.finish_run

    def finish_later(*args: Any) -> None:
        scanned.set()
        assert go_on.wait(20)
        real_finish(*args)

    monkeypatch.setattr(privacy, "finish_run", finish_later)
    eraser = threading.Thread(
        target=erase_user, args=(USER,), kwargs={"actor": OPERATOR, "source": "admin"}
    )
    eraser.start()
    try:
        assert scanned.wait(20)
        assert process_update(join) == Outcome.PROCESSED
    finally:
        go_on.set()
        eraser.join(20)
    assert left_behind(store) == []
    assert questions(fake_telegram) == []
    assert not Job.objects.filter(status=JobStatus.QUEUED).exists()
    # A request after the erasure is new data: it is kept and asked as usual.
    join["update_id"] += 1
    assert process_update(join) == Outcome.PROCESSED
    assert len(questions(fake_telegram)) == 1 and left_behind(store)


def test_the_run_record_of_a_crashed_erasure_does_not_drop_join_requests_for_a_month(
    store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    """A run that crashed waits (30 days) for its resumption, which scans everything again:
    it is not an erasure scanning now, and the requester's new requests are kept."""
    join = question_join(store)
    subject = privacy.start_run(store, USER)
    key = subject.marker_prefix.removesuffix(":")
    store.set(key, {**store.get(key), "started": int(time.time()) - 2 * 3600})
    assert not privacy.erasure_running(store, USER)
    assert process_update(join) == Outcome.PROCESSED
    assert len(questions(fake_telegram)) == 1 and left_behind(store)
    store.set(key, {**store.get(key), "started": int(time.time())})
    assert privacy.erasure_running(store, USER)
