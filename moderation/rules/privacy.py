"""The chat rules' personal data: approved members (id and name per chat) and who set a rule.
Erasure deletes the member's approvals and forgets them as the author of rules (the rules
stay: they are the chat's). See ``telegram_bot.privacy``."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from moderation.rules import matcher
from moderation.rules.models import (
    AllowedDomain,
    Approval,
    BanList,
    BanListChat,
    BlocklistEntry,
    Filter,
    Lock,
    Note,
    Report,
    ReportFlag,
    ReportNotice,
    ReportOptIn,
    SharedBan,
)
from telegram_bot.privacy import Subject
from telegram_bot.state import KVStore

MODELS = {
    "rules.Approval": "an approved member: their id and name, who approved them",
    "rules.Lock": "who set a lock",
    "rules.AllowedDomain": "who allowed a link domain",
    "rules.BlocklistEntry": "who added a blocklist entry",
    "rules.Note": "who saved a note",
    "rules.Filter": "who saved a filter",
    "rules.Report": "a reported message: its author (id, name, an excerpt), who decided it",
    "rules.ReportFlag": "who reported a message (id, name)",
    "rules.ReportOptIn": "an admin who gets reports in private (id)",
    "rules.ReportNotice": "a report's notice in an admin's private chat (its id)",
    "rules.BanList": "a shared ban list's owner (id)",
    "rules.BanListChat": "who added a chat to a shared ban list (id)",
    "rules.SharedBan": "a member banned in a shared ban list (id, name, reason), who changed it",
}
KEY_FAMILIES: dict[str, str] = {}
NOT_PERSONAL = {
    "rules:": "filter answers counted per chat and minute",
    "rules.ReportSetting": "whether members can report in a chat",
    "rules.SharedBanApplied": "which chat carried out which change of a shared ban",
}


def export(user_id: int, store: KVStore) -> dict[str, Any]:
    return {
        "approved_in": list(
            Approval.objects.filter(user_id=user_id).values("chat_id", "name", "created_at")
        ),
        "approved_others_in": list(
            Approval.objects.filter(approved_by=user_id).values_list("chat_id", flat=True)
        ),
        "locks_set": list(Lock.objects.filter(created_by=user_id).values("chat_id", "kind")),
        "domains_allowed": list(
            AllowedDomain.objects.filter(created_by=user_id).values("chat_id", "domain")
        ),
        "blocklist_added": list(
            BlocklistEntry.objects.filter(created_by=user_id).values("chat_id", "pattern")
        ),
        "notes_saved": list(Note.objects.filter(created_by=user_id).values("chat_id", "name")),
        "filters_saved": list(
            Filter.objects.filter(created_by=user_id).values("chat_id", "keyword")
        ),
        "messages_reported_of_yours": list(
            Report.objects.filter(target_id=user_id).values(
                "chat_id", "message_id", "target_name", "excerpt", "reported_at", "decision"
            )
        ),
        "reports_you_made": list(
            ReportFlag.objects.filter(reporter_id=user_id).values(
                "report__chat_id", "report__message_id", "reporter_name", "created_at"
            )
        ),
        "reports_you_decided": list(
            Report.objects.filter(decided_by_id=user_id).values(
                "chat_id", "message_id", "decision", "decided_at"
            )
        ),
        "takes_reports": ReportOptIn.objects.filter(user_id=user_id).exists(),
        "report_notices_received": ReportNotice.objects.filter(chat_id=user_id).count(),
        "shared_bans_of_you": list(
            SharedBan.objects.filter(user_id=user_id).values(
                "ban_list__name", "name", "reason", "active", "changed_at"
            )
        ),
        "shared_ban_lists_owned": list(
            BanList.objects.filter(owner_id=user_id).values("name", "created_at")
        ),
        "shared_ban_changes_made": SharedBan.objects.filter(changed_by=user_id).count(),
        "chats_added_to_lists": BanListChat.objects.filter(added_by=user_id).count(),
    }


def erase(subject: Subject, store: KVStore) -> dict[str, int]:
    user = subject.user_id
    with transaction.atomic():
        counts = {
            "approvals": Approval.objects.filter(user_id=user).delete()[0],
            "approvals_given": Approval.objects.filter(approved_by=user).update(
                approved_by=subject.pseudonym
            ),
            "rules_set": Lock.objects.filter(created_by=user).update(created_by=subject.pseudonym)
            + AllowedDomain.objects.filter(created_by=user).update(created_by=subject.pseudonym)
            + BlocklistEntry.objects.filter(created_by=user).update(created_by=subject.pseudonym)
            + Note.objects.filter(created_by=user).update(created_by=subject.pseudonym)
            + Filter.objects.filter(created_by=user).update(created_by=subject.pseudonym),
            "reports_of_their_messages": Report.objects.filter(target_id=user).delete()[0],
            "reports_made": ReportFlag.objects.filter(reporter_id=user).update(
                reporter_id=subject.pseudonym, reporter_name=""
            ),
            "reports_decided": Report.objects.filter(decided_by_id=user).update(
                decided_by_id=subject.pseudonym, decided_by_name=""
            ),
            "report_opt_in": ReportOptIn.objects.filter(user_id=user).delete()[0],
            "report_notices": ReportNotice.objects.filter(chat_id=user).delete()[0],
            # The record stays for the chats under the anonymous id, nameless: the member is
            # no longer recognised, so erasure lifts their shared bans.
            "shared_bans": SharedBan.objects.filter(user_id=user).update(
                user_id=subject.anonymous_id, name=""
            ),
            "shared_ban_changes": SharedBan.objects.filter(changed_by=user).update(
                changed_by=subject.pseudonym
            )
            + BanListChat.objects.filter(added_by=user).update(added_by=subject.pseudonym),
            "shared_ban_lists": BanList.objects.filter(owner_id=user).update(
                owner_id=subject.pseudonym
            ),
        }
    matcher.forget()
    return counts
