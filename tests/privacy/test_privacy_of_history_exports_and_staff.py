"""Personal data and permissions: the admin history keeps no id of an erased
user; an admin's export holds nobody else's data; an anti-raid removal outlives the erasure;
/addadmin of a stand-in is answered; staff rights changes are audited; /help's /forgetme line is
translated; a bot admin added in the admin site has its history. Each failed before."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry

from telegram_bot.audit import Actor
from telegram_bot.privacy import erase_user
from telegram_bot.state import KVStore
from tests.builders import make_message_update
from tests.privacy.seed import USER

pytestmark = pytest.mark.django_db(transaction=True)
OPERATOR = Actor(None, "site:operator")


def test_admin_history_keeps_no_object_id_that_is_the_erased_users_id(
    store: KVStore, admin_client: Any
) -> None:
    """A private chat's preference and a blocked chat have the chat id (the user's id) as
    their primary key: the admin site's history stores it in ``object_id``. After the
    erasure no history entry may still hold the id (docs/privacy.md: "admin-site history
    entries naming the id lose their label"; nothing links the anonymous id back)."""
    response = admin_client.post(
        "/admin/telegram_bot/chatpreference/add/",
        {"chat_id": str(USER), "time_zone": "Europe/Moscow", "language": "ru"},
    )
    assert response.status_code == 302
    assert LogEntry.objects.filter(object_id=str(USER)).exists()

    erase_user(USER, actor=OPERATOR, source="admin")

    left = list(LogEntry.objects.filter(object_id=str(USER)).values("object_id", "object_repr"))
    assert left == []


# --- the owner's /addadmin with Telegram's stand-in account ---------------------------------
def test_addadmin_of_a_stand_in_account_is_answered_not_dead_lettered(
    bot: Any, post_update: Any
) -> None:
    """``admin_add`` refuses Telegram's stand-ins (777000, GroupAnonymousBot, Channel_Bot) with
    a ValidationError that has a message for the owner. ``/removeadmin`` and the panel catch
    ``BotError`` and answer it; ``/addadmin`` does not, so the owner gets no answer and the
    update ends as a dead letter (a poison update an operator must drop by hand)."""
    from tests.conftest import OWNER_ID

    update = make_message_update("/addadmin 777000", chat_id=OWNER_ID, user_id=OWNER_ID)
    response = post_update(update)
    texts = [c.params["text"] for c in bot.calls_to("sendMessage")]
    assert response["X-Update-Outcome"] == "processed", texts
    assert any("stand-in" in text for text in texts), texts


# --- /help in the member's language ---------------------------------------------------------
def test_the_forgetme_line_of_help_is_translated(bot: Any, post_update: Any) -> None:
    """Every text the bot sends goes through gettext; every other line
    of /help is ``gettext_lazy``, the /forgetme one is a plain English string."""
    update = make_message_update("/help", chat_id=4242, user_id=4242)
    update["message"]["from"]["language_code"] = "ru"
    post_update(update)
    [text] = [c.params["text"] for c in bot.calls_to("sendMessage")]
    line = next(line for line in text.splitlines() if line.startswith("/forgetme"))
    start = next(line for line in text.splitlines() if line.startswith("/start"))
    assert start != "/start - introduction"  # the Russian catalogue is in use
    assert line != "/forgetme - erase what the bot holds about you", text


# --- an admin's export and other people's join requests -------------------------------------
def test_an_admins_export_holds_no_requesters_bio_from_a_notice_waiting_to_be_retried(
    store: KVStore, fake_telegram: Any
) -> None:
    """docs/privacy.md: "An admin's export holds their own part of other people's join
    requests ..., never the requester's name, bio or id." The core's export section lists every
    job that mentions the admin: the ``core.admin_notice`` retry of a join request's notice to
    them (Telegram said 429) carries the requester's whole summary, name, bio and id."""
    from community.models import ChatPolicy
    from telegram_bot.models import BotAdmin
    from telegram_bot.pipeline.process import process_update
    from telegram_bot.privacy import export_user
    from tests.builders import make_join_request_update
    from tests.privacy.seed import OTHER, person

    chat = -100111
    BotAdmin.objects.create(telegram_id=USER, display_name="Zebulon")
    ChatPolicy.objects.create(chat_id=chat)
    fake_telegram.fail_next("sendMessage", times=2, status=429, retry_after=30)
    join = make_join_request_update(user_id=OTHER, chat_id=chat, bio="Olga, nurse in Riga")
    join["chat_join_request"]["from"] = person(OTHER)
    process_update(join)

    document = export_user(USER)
    leaks = [job["kind"] for job in document["apps"]["telegram_bot"]["jobs"]]
    assert "nurse in Riga" not in repr(document), leaks
    assert str(OTHER) not in repr(document)


# --- audit log completeness: who may do what in the admin site ------------------------------
@pytest.mark.django_db
def test_granting_a_staff_account_the_erase_permission_is_audited(admin_client: Any) -> None:
    """Operator actions of the admin site are recorded in the audit log (ticket, job, blocked
    chat deletions, settings...). Giving a staff account "Can erase everything held about a
    Telegram user" (or any permission, or superuser status) is done in the same admin site
    and leaves no audit entry: the log cannot say who was allowed to erase people."""
    from django.contrib.auth.models import Permission, User

    from telegram_bot.models import AuditEntry

    staff = User.objects.create_user("helper", password="x", is_staff=True)
    erase = Permission.objects.get(codename="erase_personal_data")
    before = AuditEntry.objects.count()
    response = admin_client.post(
        f"/admin/auth/user/{staff.pk}/change/",
        {
            "username": "helper",
            "is_active": "on",
            "is_staff": "on",
            "user_permissions": [str(erase.pk)],
            "last_login_0": "",
            "last_login_1": "",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    assert staff.has_perm("telegram_bot.erase_personal_data") or User.objects.get(
        pk=staff.pk
    ).has_perm("telegram_bot.erase_personal_data")
    new = list(AuditEntry.objects.order_by("id")[before:].values_list("action", flat=True))
    assert new, "no audit entry for a permission granted in the admin site"


def test_an_admins_export_holds_no_requesters_name_or_id_from_their_decision(
    store: KVStore, fake_telegram: Any
) -> None:
    """The same promise, broken by the core's audit section: the admin's ``join_request.
    approve`` entry is exported whole, with the requester as its target (id and name)."""
    from community.models import ChatPolicy
    from telegram_bot.models import BotAdmin
    from telegram_bot.pipeline.process import process_update
    from telegram_bot.privacy import export_user
    from tests.builders import make_join_request_update
    from tests.community.helpers import button_data, notifications, press_update
    from tests.privacy.seed import OTHER, person

    chat = -100111
    BotAdmin.objects.create(telegram_id=USER, display_name="Zebulon")
    ChatPolicy.objects.create(chat_id=chat)
    join = make_join_request_update(user_id=OTHER, chat_id=chat, bio="Olga, nurse in Riga")
    join["chat_join_request"]["from"] = person(OTHER)
    process_update(join)
    approve = button_data(notifications(fake_telegram)[0])["Approve"]
    process_update(press_update(approve, user_id=USER, name="Zebulon"))

    document = export_user(USER)
    assert document["apps"]["community"]["join_requests_handled"]  # their part is there
    audit = [
        (entry["action"], entry["target_id"], entry["target_name"])
        for entry in document["apps"]["telegram_bot"]["audit_log"]
    ]
    assert str(OTHER) not in repr(document) and "Olga" not in repr(document), audit


# --- the admin site's history of a bot admin added there -------------------------------------
@pytest.mark.django_db
def test_a_bot_admin_added_in_the_admin_site_has_its_history(admin_client: Any) -> None:
    """``BotAdminAdmin.save_model`` adds the row through ``admins.admin_add`` and never gives
    the form's object its primary key: Django's history entry of the addition points at no
    object (``object_id`` None), so the row's History page is empty and the success message
    links to ``.../botadmin/None/change/``."""
    from telegram_bot.models import BotAdmin

    response = admin_client.post(
        "/admin/telegram_bot/botadmin/add/", {"telegram_id": "44", "display_name": "Ann"}
    )
    assert response.status_code == 302
    row = BotAdmin.objects.get(telegram_id=44)
    entries = list(LogEntry.objects.values_list("object_id", "object_repr"))
    assert (str(row.pk), "Ann (44)") in entries, entries


# --- an anti-raid removal waiting out Telegram's rate limit -----------------------------------
def test_a_pending_anti_raid_removal_of_the_member_survives_their_erasure(store: KVStore) -> None:
    """During a raid the "join requests only" mode removes direct joiners (ban + unban); a
    removal Telegram asked to wait for is a ``community.raid_remove`` job naming the member.
    The erasure deletes every job about the person, so a raider who sends /forgetme in the
    meantime is never removed. Moderation defers the erasure for exactly this reason
    (``erasure_blocked``: "a member could otherwise escape a ban with /forgetme"); the
    anti-raid's removal is not covered: either defer, or keep the job."""
    from community.services.raid import RAID_REMOVE_JOB
    from telegram_bot.jobs.models import Job
    from telegram_bot.privacy import ErasureDeferred

    chat = -100111
    job = Job.objects.create(
        kind=RAID_REMOVE_JOB,
        payload={"chat_id": chat, "user_id": USER},
        dedupe_key=f"{RAID_REMOVE_JOB}:{chat}:{USER}",
    )
    try:
        erase_user(USER, actor=OPERATOR, source="admin")
    except ErasureDeferred:
        return  # deferred: the removal runs first
    assert Job.objects.filter(pk=job.pk).exists(), "the raider's removal was cancelled"


def test_a_captcha_in_progress_defers_the_erasure_and_a_finished_one_does_not(
    store: KVStore,
) -> None:
    """Erasing deletes the challenge; its deadline job (payload: the token) would then find
    nothing and leave the member muted by the captcha for good."""
    from dataclasses import replace

    from community.member_state import challenge_key
    from telegram_bot.privacy import ErasureDeferred
    from tests.privacy.seed import unfinished_captcha

    challenge = unfinished_captcha(store, USER, "cap-pending", seconds_left=120)
    with pytest.raises(ErasureDeferred, match="captcha"):
        erase_user(USER, actor=OPERATOR, source="admin")
    assert store.get(challenge_key(challenge.token)) is not None
    done = replace(challenge, status="passed", finished=True)
    store.set(challenge_key(challenge.token), done.to_json())
    erase_user(USER, actor=OPERATOR, source="admin")
    assert store.get(challenge_key(challenge.token)) is None


@pytest.mark.django_db
def test_a_staff_account_added_in_the_admin_site_is_audited_without_its_password(
    admin_client: Any,
) -> None:
    from django.contrib.auth.models import User

    from telegram_bot.models import AuditEntry

    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "newstaff",
            "password1": "Sup3r-secret-pw-1",
            "password2": "Sup3r-secret-pw-1",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    assert User.objects.filter(username="newstaff").exists()
    [entry] = AuditEntry.objects.filter(action="user.add")
    assert entry.actor_name == "admin:admin" and "newstaff" in entry.target_name
    assert "staff=False superuser=False" in entry.detail
    assert "Sup3r" not in repr(list(AuditEntry.objects.values()))
