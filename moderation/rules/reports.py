"""Reports: a member flags a message to the chat's admins (``/report`` or ``@admin`` in reply
to it), the admins who take reports get a notice in private with buttons (delete, warn,
mute 1 h, ban, dismiss), and the first admin's decision wins.

- One ``Report`` per message, however many members report it; a member reports a message
  once (``ReportFlag``), and at most ``REPORTS_PER_HOUR`` messages an hour in a chat (abuse).
- Who gets the notice: the chat's current admins (asked of Telegram, cached as moderation
  does) who opted in with ``/reports on`` in private (``ReportOptIn``). The notices are sent
  once per report (claimed by ``Report.notified`` before sending), each through the core's
  ``notify_admins``: a transient failure is retried by its job and the late copy linked
  (``rules.report_notice``).
- The decision: a press claims the open report by one conditional update (so two admins
  pressing at once get one decision), then the action runs through moderation's services
  under the presser's name (the same idempotency as a command: one action per update), the
  other admins' notices are edited to say who decided what, and a re-delivered press
  carries the same decision out again, harmlessly. The presser must still be an admin of
  the chat with the right the action needs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from moderation import services as moderation
from moderation.models import Action
from moderation.rights import DELETE, RESTRICT, Refusal, chat_admins, check_moderator
from moderation.rules.models import Report, ReportFlag, ReportNotice, ReportOptIn, ReportSetting
from moderation.services import Origin, Target
from telegram_bot import languages
from telegram_bot.admins import Role, role_of
from telegram_bot.audit import Actor, audit_record
from telegram_bot.client import TelegramClient
from telegram_bot.errors import TelegramApiError
from telegram_bot.jobs.services import job_retry_later
from telegram_bot.notifications import FollowUp, notify_admins
from telegram_bot.state import KVStore, get_store

log = logging.getLogger(__name__)

REPORTS_PER_HOUR = 5
MUTE_SECONDS = 3600
CALLBACK = "rp:"
NOTICE_JOB = "rules.report_notice"
DELETE_JOB = "rules.report_delete"
CAUSE = "report"
Decision = Report.Decision
# Each decision's letter on its button, the right it needs, and the label.
BUTTONS: dict[str, tuple[str, str | None, Any]] = {
    "d": (Decision.DELETE, DELETE, gettext_lazy("🗑 Delete")),
    "w": (Decision.WARN, RESTRICT, gettext_lazy("⚠️ Warn")),
    "m": (Decision.MUTE, RESTRICT, gettext_lazy("🔇 Mute 1 h")),
    "b": (Decision.BAN, RESTRICT, gettext_lazy("⛔ Ban")),
    "x": (Decision.DISMISS, None, gettext_lazy("✖ Dismiss")),  # any admin of the chat
}


@dataclass(frozen=True)
class Reported:
    """A report as the command saw it."""

    chat_id: int
    chat_title: str
    message_id: int
    target: Target
    excerpt: str
    reporter: Actor
    update_id: int


def reports_enabled(chat_id: int) -> bool:
    row = ReportSetting.objects.filter(chat_id=chat_id).values_list("enabled", flat=True).first()
    return True if row is None else bool(row)


def reports_set(chat_id: int, enabled: bool, *, actor: Actor, update_id: int | None) -> None:
    ReportSetting.objects.update_or_create(chat_id=chat_id, defaults={"enabled": enabled})
    audit_record(
        action="rules.reports_on" if enabled else "rules.reports_off",
        actor=actor,
        source="command",
        chat_id=chat_id,
        update_id=update_id,
    )


def opt_in(user_id: int, on: bool) -> bool:
    """Take reports in private (or stop); whether that changed anything."""
    if on:
        return ReportOptIn.objects.get_or_create(user_id=user_id)[1]
    return ReportOptIn.objects.filter(user_id=user_id).delete()[0] > 0


def opted_in(user_id: int) -> bool:
    return ReportOptIn.objects.filter(user_id=user_id).exists()


def report(client: TelegramClient, store: KVStore, reported: Reported) -> str:
    """Record a member's report and tell the admins (once); the answer for the chat."""
    reporter_id = reported.reporter.telegram_id
    assert reporter_id is not None
    flag = ReportFlag.objects.filter(
        report__chat_id=reported.chat_id,
        report__message_id=reported.message_id,
        reporter_id=reporter_id,
    ).first()
    if flag is not None and flag.update_id != reported.update_id:
        return _("You reported this message already.")
    if flag is None:
        since = timezone.now() - timedelta(hours=1)
        recent = ReportFlag.objects.filter(
            report__chat_id=reported.chat_id, reporter_id=reporter_id, created_at__gte=since
        ).count()
        if recent >= REPORTS_PER_HOUR:
            return _("You have reported %(count)d messages in the last hour: wait a little.") % {
                "count": recent
            }
        try:
            flag = _record(reported)
        except IntegrityError:  # the same member's report of it, at the same moment
            return _("You reported this message already.")
    case = flag.report
    if case.status == Report.Status.DECIDED:
        return _("The admins have dealt with that message already.")
    admins = chat_admins(store, client, reported.chat_id)
    people = [uid for uid, admin in admins.items() if not admin.is_anonymous]
    takers = list(ReportOptIn.objects.filter(user_id__in=people).values_list("user_id", flat=True))
    if not takers:
        return _(
            "Reported. No admin here takes reports in private yet: an admin can send "
            "/reports on to me in a private chat."
        )
    _notify(case, reported, takers)
    return _("Reported to the admins.")


def _record(reported: Reported) -> ReportFlag:
    with transaction.atomic():
        case, _created = Report.objects.get_or_create(
            chat_id=reported.chat_id,
            message_id=reported.message_id,
            defaults={
                "chat_title": reported.chat_title[:200],
                "target_id": reported.target.user_id,
                "target_name": reported.target.label[:200],
                "excerpt": reported.excerpt[:300],
            },
        )
        flag = ReportFlag.objects.create(
            report=case,
            reporter_id=reported.reporter.telegram_id,
            reporter_name=reported.reporter.name[:200],
            update_id=reported.update_id,
        )
        audit_record(
            action="rules.report",
            actor=reported.reporter,
            source="command",
            chat_id=reported.chat_id,
            target_id=reported.target.user_id,
            target_name=reported.target.label,
            detail=f"message #{reported.message_id}",
            update_id=reported.update_id,
        )
    return flag


def _notify(case: Report, reported: Reported, takers: list[int]) -> None:
    def claim() -> bool:
        return Report.objects.filter(pk=case.pk, notified=False).update(notified=True) == 1

    def text() -> str:
        return notice_text(case)

    sent = notify_admins(
        text,
        purpose="report",
        reply_markup=buttons(case.pk),
        claim=claim,
        recipients=takers,
        on_sent=FollowUp(NOTICE_JOB, {"report": case.pk}),
    )
    for admin_id, message in sent.sent.items():
        notice_link(case.pk, admin_id, int(message["message_id"]))


def notice_link(report_id: int, chat_id: int, message_id: int) -> None:
    ReportNotice.objects.get_or_create(
        report_id=report_id, chat_id=chat_id, defaults={"message_id": message_id}
    )


def notice_text(case: Report) -> str:
    lines = [
        _("Report in %(chat)s") % {"chat": case.chat_title or case.chat_id},
        _("Author: %(name)s (%(id)s)") % {"name": case.target_name, "id": case.target_id},
    ]
    if case.excerpt:
        lines.append("«" + case.excerpt + "»")
    link = message_link(case.chat_id, case.message_id)
    if link:
        lines.append(link)
    if case.status == Report.Status.DECIDED:
        lines.append(
            _("Decided by %(admin)s: %(decision)s.")
            % {
                "admin": case.decided_by_name or case.decided_by_id,
                "decision": case.get_decision_display(),
            }
        )
    return "\n".join(lines)


def message_link(chat_id: int, message_id: int) -> str:
    """t.me/c/<id>/<message> for a supergroup (only its members can open it)."""
    text = str(chat_id)
    if not text.startswith("-100"):
        return ""
    return f"https://t.me/c/{text[4:]}/{message_id}"


def buttons(report_id: int) -> dict[str, Any]:
    row1 = [_button(report_id, letter) for letter in "dwm"]
    row2 = [_button(report_id, letter) for letter in "bx"]
    return {"inline_keyboard": [row1, row2]}


def _button(report_id: int, letter: str) -> dict[str, str]:
    return {"text": str(BUTTONS[letter][2]), "callback_data": f"{CALLBACK}{report_id}:{letter}"}


def parse(data: str) -> tuple[int, str]:
    """``rp:<report id>:<letter>``; ValueError on anything else."""
    if not data.startswith(CALLBACK):
        raise ValueError(data)
    number, _sep, letter = data[len(CALLBACK) :].partition(":")
    if not number.isdigit() or len(number) > 18 or letter not in BUTTONS:
        raise ValueError(data)
    return int(number), letter


@dataclass(frozen=True)
class Pressed:
    """What a press came to: the answer for the presser, whether it is an alert, and the
    report to show (None: the notice stays as it is)."""

    text: str
    alert: bool = False
    case: Report | None = None


def decide(
    client: TelegramClient,
    store: KVStore,
    *,
    report_id: int,
    letter: str,
    actor: Actor,
    update_id: int,
) -> Pressed:
    """An admin's button on a report's notice."""
    case = Report.objects.filter(pk=report_id).first()
    if case is None:
        return Pressed(_("This report no longer exists."), alert=True)
    decision, right, _label = BUTTONS[letter]
    if case.status == Report.Status.DECIDED and case.decided_update != update_id:
        return Pressed(_already(case), alert=True, case=case)
    admins = chat_admins(store, client, case.chat_id)
    try:
        if right is not None:
            check_moderator(admins, actor.telegram_id, right)
        elif actor.telegram_id not in admins and role_of(actor.telegram_id) < Role.ADMIN:
            raise Refusal(_("Only the chat's admins can do that."))
    except Refusal as refusal:
        return Pressed(str(refusal), alert=True)
    won = Report.objects.filter(pk=case.pk, status=Report.Status.OPEN).update(
        status=Report.Status.DECIDED,
        decision=decision,
        decided_by_id=actor.telegram_id,
        decided_by_name=actor.name[:200],
        decided_at=timezone.now(),
        decided_update=update_id,
    )
    case.refresh_from_db()
    if not won and case.decided_update != update_id:
        return Pressed(_already(case), alert=True, case=case)
    answer = _carry_out(client, case, actor, update_id)
    _show_everywhere(client, case)
    return Pressed(answer, case=case)


def _already(case: Report) -> str:
    return _("Already decided by %(admin)s: %(decision)s.") % {
        "admin": case.decided_by_name or case.decided_by_id,
        "decision": case.get_decision_display(),
    }


def _carry_out(client: TelegramClient, case: Report, actor: Actor, update_id: int) -> str:
    if case.decision == Decision.DISMISS:
        audit_record(
            action="rules.report_dismiss",
            actor=actor,
            source="button",
            chat_id=case.chat_id,
            target_id=case.target_id,
            target_name=case.target_name,
            detail=f"message #{case.message_id}",
            update_id=update_id,
        )
        return _("Dismissed.")
    origin = Origin(case.chat_id, actor, "button", update_id, cause=CAUSE)
    target = Target(case.target_id, case.target_name)
    reason = _("reported message")
    answers = [delete_reported(client, origin, case)]
    if case.decision == Decision.WARN:
        answers.append(moderation.warn_and_act(client, origin, target, reason))
    elif case.decision == Decision.MUTE:
        answers.append(
            moderation.penalize(
                client,
                origin=origin,
                action=Action.MUTE,
                target=target,
                seconds=MUTE_SECONDS,
                reason=reason,
            )
        )
    elif case.decision == Decision.BAN:
        answers.append(
            moderation.penalize(
                client, origin=origin, action=Action.BAN, target=target, reason=reason
            )
        )
    return " ".join(answer for answer in answers if answer)[:200]


def delete_reported(
    client: TelegramClient, origin: Origin, case: Report, *, in_job: bool = False
) -> str:
    """Delete the reported message (once per press), audited; a retryable refusal goes to the
    ``rules.report_delete`` job."""
    if moderation.already_done(origin.update_id, "delete", origin.cause):
        return ""
    payload = {
        "report": case.pk,
        "actor_id": origin.actor.telegram_id,
        "actor_name": origin.actor.name,
        "update_id": origin.update_id,
    }
    key = f"{DELETE_JOB}:{case.pk}:{origin.update_id}"
    status, refusal = moderation.delete_once(
        client,
        case.chat_id,
        case.message_id,
        retry=lambda exc: job_retry_later(DELETE_JOB, payload, dedupe_key=key, error=exc),
        record=lambda outcome, note: _audit_delete(origin, case, outcome, note),
        in_job=in_job,
    )
    if status == moderation.QUEUED:
        return _("The message will be deleted shortly.")
    if status == moderation.REFUSED and refusal is not None:
        return _("The message could not be deleted: %(why)s") % {"why": refusal.description}
    return "" if status == moderation.GONE else _("Message deleted.")


def _audit_delete(origin: Origin, case: Report, outcome: str, note: str) -> None:
    detail = f"reported message #{case.message_id}"
    audit_record(
        action="delete",
        actor=origin.actor,
        source=origin.source,
        chat_id=case.chat_id,
        target_id=case.target_id,
        target_name=case.target_name,
        outcome=outcome,
        detail=f"{detail}; {note}" if note else detail,
        update_id=origin.update_id,
        cause=origin.cause,
    )


def _show_everywhere(client: TelegramClient, case: Report) -> None:
    """Every admin's notice of the report now says who decided what (no buttons left)."""
    store = get_store()
    for chat_id, message_id in case.notices.values_list("chat_id", "message_id"):
        with translation.override(languages.recipient_language(store, user_id=chat_id)):
            text = notice_text(case)
        try:
            client.edit_message_text(chat_id=chat_id, message_id=message_id, text=text)
        except TelegramApiError as exc:  # "message is not modified" on a re-delivery, a block
            log.info("report notice %s/%s not edited: %s", chat_id, message_id, exc)


def delete_job(payload: dict[str, Any], client: TelegramClient) -> None:
    """The ``rules.report_delete`` job: a deletion Telegram asked to retry."""
    case = Report.objects.filter(pk=int(payload["report"])).first()
    if case is None:
        return
    actor = Actor(payload.get("actor_id"), str(payload.get("actor_name", "")))
    origin = Origin(case.chat_id, actor, "button", payload.get("update_id"), cause=CAUSE)
    delete_reported(client, origin, case, in_job=True)


def notice_job(payload: dict[str, Any]) -> None:
    """``rules.report_notice``: a notice that arrived late (retried) is linked like the others,
    and shows the decision if one was taken meanwhile."""
    report_id, chat_id = int(payload["report"]), int(payload["chat_id"])
    notice_link(report_id, chat_id, int(payload["message_id"]))
