"""The admin pages and the management commands of export and erasure."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client

from telegram_bot.jobs.models import Job
from telegram_bot.models import AuditEntry, BotAdmin
from telegram_bot.privacy import ERASE_ACTION, EXPORT_ACTION
from telegram_bot.state import KVStore
from tests.privacy.seed import OTHER, USER, chat_totals, seed, traces

pytestmark = pytest.mark.django_db(transaction=True)


def operator(client: Client, *codenames: str) -> Client:
    user = User.objects.create_user("operator", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def test_the_export_page_downloads_one_json_file_and_is_audited(
    client: Client, store: KVStore
) -> None:
    seed(store)
    operator(client, "export_personal_data")
    response = client.post("/admin/privacy/export/", {"user_id": str(USER)})
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="user-{USER}.json"'
    document = json.loads(response.content)
    assert document["telegram_user_id"] == USER and document["apps"]["support"]["tickets"]
    entry = AuditEntry.objects.get(action=EXPORT_ACTION)
    assert (entry.target_id, entry.actor_name) == (USER, "site:operator")


@pytest.mark.parametrize("value", ["", "abc", "-5", "0", "99999999999999999999"])
def test_a_bad_user_id_is_refused_with_a_message(
    client: Client, store: KVStore, value: str
) -> None:
    operator(client, "export_personal_data")
    response = client.post("/admin/privacy/export/", {"user_id": value})
    assert response.status_code == 400
    assert not AuditEntry.objects.exists()


def test_the_erase_page_needs_the_id_twice(client: Client, store: KVStore) -> None:
    seed(store)
    totals = chat_totals()
    operator(client, "erase_personal_data", "delete_botadmin")  # the seed's USER is an admin
    response = client.post("/admin/privacy/erase/", {"user_id": str(USER), "confirm": "1234"})
    assert response.status_code == 400
    assert b"The two ids differ" in response.content
    assert traces(store)

    response = client.post(
        "/admin/privacy/erase/", {"user_id": str(USER), "confirm": str(USER)}, follow=True
    )
    assert response.status_code == 200
    # Named as the apps knew them before the erasure (the name itself is gone after it).
    assert re.search(rb"Erased ([^<:]+ )?[^<:]*: ", response.content)
    assert traces(store) == {}
    assert chat_totals() == totals
    assert AuditEntry.objects.get(action=ERASE_ACTION).actor_name == "site:operator"


def test_erasing_a_bot_admin_needs_the_permission_to_delete_bot_admins(
    client: Client, store: KVStore
) -> None:
    """An erasure deletes the person's bot admin row: with the erase permission alone, an
    operator could remove any run-time admin they may not delete in the admin site."""
    seed(store)
    operator(client, "erase_personal_data")
    response = client.post("/admin/privacy/erase/", {"user_id": str(USER), "confirm": str(USER)})
    assert response.status_code == 400
    assert b"needs the permission to delete bot admins" in response.content
    assert BotAdmin.objects.filter(telegram_id=USER).exists()
    assert not AuditEntry.objects.filter(action=ERASE_ACTION).exists()
    assert traces(store)  # nothing was erased


def test_a_pending_moderation_action_defers_the_erasure_with_a_message(
    client: Client, store: KVStore, capsys: Any
) -> None:
    job = Job.objects.create(
        kind="moderation.act", payload={"user_id": OTHER, "action": "ban", "chat_id": -1}
    )
    operator(client, "erase_personal_data")
    response = client.post("/admin/privacy/erase/", {"user_id": str(OTHER), "confirm": str(OTHER)})
    assert response.status_code == 400
    assert b"Not erased yet: a moderation action about this member (ban)" in response.content
    with pytest.raises(CommandError, match=r"Not erased yet: .*\(ban\)"):
        call_command("erase_user", str(OTHER), yes=True)
    assert Job.objects.filter(pk=job.pk).exists()
    assert not AuditEntry.objects.filter(action=ERASE_ACTION).exists()


def test_export_permission_does_not_erase(client: Client, store: KVStore) -> None:
    operator(client, "export_personal_data")
    response = client.post("/admin/privacy/erase/", {"user_id": str(USER), "confirm": str(USER)})
    assert response.status_code == 403


def test_export_user_writes_one_file(store: KVStore, tmp_path: Path) -> None:
    seed(store)
    target = tmp_path / "out.json"
    old_umask = os.umask(0o022)  # a usual umask: the file must be private whatever it is
    try:
        call_command("export_user", str(USER), output=str(target))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # one person's data
    document = json.loads(target.read_text())
    assert set(document["apps"]) >= {"support", "stats", "community", "moderation"}
    with pytest.raises(CommandError, match="exists"):
        call_command("export_user", str(USER), output=str(target))
    with pytest.raises(CommandError, match="positive whole number"):
        call_command("export_user", "12x")


def test_export_user_leaves_no_partial_file_when_the_disk_fills(
    store: KVStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails halfway (a full disk) removes the file: a partial export read later
    as the whole of what is held about the person would be wrong."""
    import errno

    from telegram_bot.management.commands import export_user as command

    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, file: Any) -> None:
            self.file = file

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, text: str) -> int:
            self.file.write(text[:100])
            self.file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(command.os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    seed(store)
    target = tmp_path / "out.json"
    with pytest.raises(CommandError, match=r"cannot write .*No space left"):
        call_command("export_user", str(USER), output=str(target))
    assert not target.exists()


def test_erase_user_asks_for_yes_then_erases(store: KVStore, capsys: Any) -> None:
    seed(store)
    with pytest.raises(CommandError, match="--yes"):
        call_command("erase_user", str(USER))
    assert traces(store)
    call_command("erase_user", str(USER), yes=True)
    assert traces(store) == {}
    assert "Erased: " in capsys.readouterr().out
