"""Start checks and erasure: an unknown REDIS_URL option stops the
start; the kick task keeps the tick's window; /forgetme deferred by a captcha blames no
moderator; a refused replay keeps a committed old letter from running again; a password changed
on the site's own page is audited. Each test failed on the code before."""

from __future__ import annotations

from typing import Any

import pytest

from telegram_bot.jobs import registry, runner
from telegram_bot.jobs.runner import JobRun
from telegram_bot.jobs.services import job_enqueue
from telegram_bot.pipeline import process as pipeline
from telegram_bot.pipeline.process import Outcome, process_update
from telegram_bot.pipeline.router import Route, Router
from telegram_bot.state import KVStore
from tests.builders import make_callback_update, make_message_update
from tests.fakes.telegram import FakeTelegramServer
from tests.unit.config.test_settings import BASE_ENV, run_manage


# --- 1. REDIS_URL: an option redis-py cannot read still starts ---------------------------------
def test_a_redis_url_with_an_unknown_option_stops_the_start() -> None:
    """README: "an option redis-py cannot read stops the start". redis-py's parse_url passes
    an unknown query name (a typo: sockettimeout for socket_timeout) on as a keyword argument,
    and the first connection then raises TypeError ("unexpected keyword argument"): not
    StateUnavailableError, so every update is a 500. redis_url_check only catches ValueError."""
    result = run_manage({**BASE_ENV, "REDIS_URL": "redis://127.0.0.1:6379/12?sockettimeout=2"})
    assert result.returncode == 2, "started; every update would then fail with a TypeError"
    assert "REDIS_URL" in result.stderr


# --- 2. the kick task has no window ------------------------------------------------------------
@pytest.mark.django_db
def test_the_kick_task_starts_no_job_past_the_tick_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """0ee4d8f gave run_until_idle (jobs_tick) a deadline so that a backlog of slow sends does
    not run past django-q2's 120 s task timeout, whose alarm stops a job mid-send. The other
    django-q2 entry point that runs jobs, ``jobs_run_due`` (queued by every
    ``job_enqueue(kick=True)``, under the same cluster timeout), still calls ``run_due`` with
    no deadline: 10 jobs of 30 s each (a slow Telegram) run for 300 s."""
    from telegram_bot import tasks

    clock = [1000.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    started: list[float] = []

    def slow(payload: dict[str, Any], run: JobRun) -> None:
        started.append(clock[0] - 1000.0)
        clock[0] += 30.0  # one slow send

    handlers = registry.job_handlers()
    handlers["review.slow30"] = slow
    try:
        for i in range(10):
            job_enqueue("review.slow30", {"i": i})
        tasks.jobs_run_due()
    finally:
        handlers.pop("review.slow30", None)
    late = [at for at in started if at >= tasks.TICK_SECONDS]
    assert late == [], f"jobs started {late} s into a django-q2 task (timeout 120 s)"


# --- 3. /forgetme blames the moderators for a captcha -----------------------------------------
@pytest.mark.django_db(transaction=True)
def test_forgetme_deferred_by_a_captcha_does_not_blame_the_moderators(
    store: KVStore, fake_telegram: FakeTelegramServer
) -> None:
    """ba58c6b added community's erasure blockers (an anti-raid removal, a captcha not
    finished, a join request being decided). /forgetme's answer to a deferred erasure still
    says "an action of a chat's moderators about you is still to be applied" whatever the
    reason: a member in the middle of a captcha is told moderators are acting on them, and to
    come back "in a few minutes" although the captcha waits for their own answer."""
    from tests.privacy.seed import USER, unfinished_captcha

    unfinished_captcha(store, USER, "cap-review", seconds_left=300)
    assert process_update(make_message_update("/forgetme", chat_id=USER, user_id=USER)) == (
        Outcome.PROCESSED
    )
    markup = fake_telegram.calls_to("sendMessage")[-1].params["reply_markup"]
    [[erase], _cancel] = markup["inline_keyboard"]
    assert process_update(make_callback_update(erase["callback_data"], user_id=USER)) == (
        Outcome.PROCESSED
    )
    told = fake_telegram.calls_to("editMessageText")[-1].params["text"]
    assert told.startswith("Nothing was erased yet"), told
    assert "captcha" in told and "an action of a chat's moderators about you" not in told, told


# --- 4. a refused replay of a letter from before unit markers --------------------------------
ran: list[int] = []
fail = {"raise": False}


def _admin_command(ctx: Any) -> None:
    if fail["raise"]:
        raise RuntimeError("a bug in the handler")
    ran.append(ctx.update.update_id)


@pytest.mark.django_db
def test_a_refused_replay_keeps_a_committed_legacy_letter_from_running_again(
    bot: Any, memory_store: KVStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ARCHITECTURE: a letter whose update marker is DONE and no unit has a marker was written
    before unit markers existed, by a handler that had committed: nothing of it runs again.
    a9e5315 marks a refused (or ignored) replay dead whatever the marker was: a refused
    replay of such a letter turns its DONE into DEAD, and the next replay runs the committed
    handler a second time (before, the DONE stayed and the replay ran nothing)."""
    from telegram_bot.admins import Role
    from telegram_bot.models import BotAdmin
    from telegram_bot.pipeline import idempotency
    from telegram_bot.pipeline.process import dead_letters

    router = Router([Route.on_command("admincmd", _admin_command, role=Role.ADMIN)])
    monkeypatch.setattr(pipeline, "get_router", lambda: router)
    ran.clear()
    BotAdmin.objects.create(telegram_id=7171, display_name="helper")
    update = make_message_update("/admincmd", chat_id=7171, user_id=7171)
    fail["raise"] = True
    assert process_update(update) == Outcome.DEAD_LETTER
    fail["raise"] = False
    letter = dead_letters().get(update["update_id"])
    assert letter is not None
    # The letter as an older version left it: its handler had committed (DONE), no unit marker.
    memory_store.set(idempotency.marker_key(update["update_id"]), idempotency.DONE)
    for key in list(memory_store.scan_all(idempotency.unit_marker_key(update["update_id"], ""))):
        memory_store.delete(key)

    BotAdmin.objects.filter(telegram_id=7171).delete()
    assert process_update(letter.update, replay=True) == Outcome.REFUSED
    BotAdmin.objects.create(telegram_id=7171, display_name="helper")
    assert process_update(letter.update, replay=True) == Outcome.PROCESSED
    assert ran == [], "the committed handler of a legacy letter ran again"


# --- 5. the admin site's own password change is not audited -----------------------------------
@pytest.mark.django_db
def test_a_staff_password_change_in_the_admin_site_is_audited(client: Any) -> None:
    """ba58c6b: "staff accounts' and groups' changes in the admin site are audited (user.*)".
    A password set through the Users page (/admin/auth/user/<id>/password/) is recorded as
    user.change; the same account's password changed through the site's own
    /admin/password_change/ (every staff member has the link) records nothing: someone with
    a stolen session takes the account over without an audit entry."""
    from django.contrib.auth.models import User

    from telegram_bot.models import AuditEntry

    staffer = User.objects.create_user("staffer", password="Old-pass-123456", is_staff=True)
    client.force_login(staffer)
    response = client.post(
        "/admin/password_change/",
        {
            "old_password": "Old-pass-123456",
            "new_password1": "New-pass-654321x",
            "new_password2": "New-pass-654321x",
        },
    )
    assert response.status_code == 302, response.content[:1000]
    assert User.objects.get(username="staffer").check_password("New-pass-654321x")
    assert AuditEntry.objects.filter(action__startswith="user.").exists(), list(
        AuditEntry.objects.values_list("action", flat=True)
    )
