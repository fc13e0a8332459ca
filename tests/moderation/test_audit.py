"""The audit log: recorded once per update and action, listed, searched, exported with its
own permission."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from telegram_bot.audit import BOT, Actor, audit_record
from telegram_bot.audit.admin import csv_cell
from telegram_bot.models import AuditEntry

pytestmark = pytest.mark.django_db


def _record(**overrides: Any) -> AuditEntry | None:
    values: dict[str, Any] = {
        "action": "ban",
        "actor": Actor(1000, "Owner"),
        "source": "command",
        "chat_id": -100777,
        "target_id": 2002,
        "target_name": "Mallory",
        "reason": "spam",
        "update_id": 555,
    }
    values.update(overrides)
    return audit_record(**values)


def test_one_entry_per_update_and_action() -> None:
    assert _record() is not None
    assert _record() is None  # the re-delivery
    assert _record(action="warn") is not None  # another action of the same update
    assert AuditEntry.objects.count() == 2


def test_entries_without_an_update_are_each_recorded() -> None:
    _record(update_id=None, source="admin", actor=Actor(None, "operator"))
    _record(update_id=None, source="admin", actor=Actor(None, "operator"))
    assert AuditEntry.objects.filter(source="admin").count() == 2


def test_bad_source_and_action_are_refused_and_long_text_clipped() -> None:
    with pytest.raises(ValueError, match="source"):
        _record(source="telepathy")
    with pytest.raises(ValueError, match="action"):
        _record(action="")
    entry = _record(reason="x" * 2000, actor=BOT)
    assert entry is not None and len(entry.reason) == 500 and entry.actor_name == "bot"


def test_csv_cells_never_start_a_formula() -> None:
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_cell("-5h") == "'-5h"
    assert csv_cell(-100777) == "-100777"
    assert csv_cell(None) == ""


def _staff(*perms: str) -> Client:
    account = User.objects.create_user(f"u{len(perms)}", password="x", is_staff=True)
    for name in perms:
        app, codename = name.split(".")
        account.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    client = Client()
    client.force_login(account)
    return client


def test_list_filters_and_searches_by_text_and_id() -> None:
    _record(update_id=1, target_name="Mallory", reason="spam")
    _record(update_id=2, action="warn", target_id=3003, target_name="Trent", reason="rude")
    client = _staff("telegram_bot.view_auditentry")
    url = "/admin/telegram_bot/auditentry/"
    page = client.get(url).content.decode()
    assert "Mallory" in page and "Trent" in page
    assert "Mallory" not in client.get(url, {"action__exact": "warn"}).content.decode()
    found = client.get(url, {"q": "3003"}).content.decode()
    assert "Trent" in found and "Mallory" not in found
    found = client.get(url, {"q": "spam"}).content.decode()
    assert "Mallory" in found and "Trent" not in found
    for odd in ("--3003", "\u00b2", "-\u00b9\u00b2", "9" * 25):  # text search only, no 500
        response = client.get(url, {"q": odd})
        assert response.status_code == 200 and "Trent" not in response.content.decode()
    # Append-only: no add page, no delete.
    assert client.get(url + "add/").status_code == 403


def test_export_needs_its_permission() -> None:
    entry = _record(reason="=cmd|' /C calc'!A0", target_name="Мария")
    assert entry is not None
    form = {"action": "export_csv", "_selected_action": [str(entry.pk)], "index": "0"}
    url = "/admin/telegram_bot/auditentry/"
    viewer = _staff("telegram_bot.view_auditentry")
    refused = viewer.post(url, form)
    assert refused.get("Content-Type", "").startswith("text/html")
    exporter = _staff("telegram_bot.view_auditentry", "telegram_bot.export_auditentry")
    response = exporter.post(url, form)
    assert response["Content-Type"].startswith("text/csv")
    # A byte-order mark first: spreadsheet programs then read the file as UTF-8 (Cyrillic).
    assert response.content.startswith("\ufeff".encode())
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert rows[0][0] == "created_at"
    assert rows[1][rows[0].index("target_name")] == "Мария"
    assert rows[1][rows[0].index("reason")] == "'=cmd|' /C calc'!A0"
    assert rows[1][rows[0].index("target_id")] == "2002"
