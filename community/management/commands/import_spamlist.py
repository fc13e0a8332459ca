"""``manage.py import_spamlist FILE``: load spam-listed accounts into the local list
(``SpamListEntry``), which every new member of every chat is checked against.

The file holds one account per line: a user id, optionally followed by a reason (after a
comma, a tab or a space); blank lines and lines starting with ``#`` are skipped, so CAS's
export (one id per line) loads as it is. ``-`` reads standard input. The whole file is checked
first: one bad line and nothing is imported (the error names the first bad lines).
``--replace`` also drops the entries of the same ``--source`` that the file no longer lists.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from community.models import SpamListEntry

SOURCE_RE = re.compile(r"^[a-z0-9_.-]{1,40}$")
LINE_RE = re.compile(r"^\s*(\d{1,16})\s*(?:[,;\t ]\s*(.*?))?\s*$")
MAX_USER_ID = 2**53
BATCH = 5000
SHOWN_ERRORS = 5


def parse(lines: Iterable[str]) -> tuple[dict[int, str], list[str]]:
    """The accounts of the file (user id -> reason) and its bad lines, described."""
    accounts: dict[int, str] = {}
    errors: list[str] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        match = LINE_RE.match(text)
        user_id = int(match.group(1)) if match else 0
        if match is None or not 0 < user_id < MAX_USER_ID:
            errors.append(f"line {number}: {text[:40]!r} is not a user id")
            continue
        accounts[user_id] = (match.group(2) or "")[:200]
    return accounts, errors


class Command(BaseCommand):
    help = "Import spam-listed Telegram accounts (one user id per line) into the local list."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the file to read, or - for standard input")
        parser.add_argument(
            "--source", default="local", help="the list's name (a-z, 0-9, _.-; default: local)"
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="drop the entries of this source that the file does not list",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = str(options["source"]).strip().lower()
        if not SOURCE_RE.match(source):
            raise CommandError("--source: 1 to 40 characters of a-z, 0-9, _ . -")
        accounts, errors = self._read(str(options["file"]))
        if errors:
            shown = "; ".join(errors[:SHOWN_ERRORS])
            more = f" (and {len(errors) - SHOWN_ERRORS} more)" if len(errors) > SHOWN_ERRORS else ""
            raise CommandError(f"nothing imported: {shown}{more}")
        rows = [SpamListEntry(user_id=u, source=source, reason=r) for u, r in accounts.items()]
        with transaction.atomic():
            dropped = 0
            if options["replace"]:
                dropped = self._drop(source, accounts)
            for start in range(0, len(rows), BATCH):
                SpamListEntry.objects.bulk_create(
                    rows[start : start + BATCH],
                    update_conflicts=True,
                    unique_fields=["user_id"],
                    update_fields=["source", "reason"],
                )
        self.stdout.write(
            f"{len(rows)} accounts in the {source} list"
            + (f", {dropped} dropped" if options["replace"] else "")
        )

    def _read(self, path: str) -> tuple[dict[int, str], list[str]]:
        if path == "-":
            return parse(sys.stdin)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return parse(handle)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None

    @staticmethod
    def _drop(source: str, keep: dict[int, str]) -> int:
        """The source's entries the file no longer lists, dropped (compared here rather than
        in one NOT IN of a list that may hold millions)."""
        stale = [
            pk
            for pk, user_id in SpamListEntry.objects.filter(source=source).values_list(
                "pk", "user_id"
            )
            if user_id not in keep
        ]
        dropped = 0
        for start in range(0, len(stale), BATCH):
            count, _ = SpamListEntry.objects.filter(pk__in=stale[start : start + BATCH]).delete()
            dropped += count
        return dropped
