"""Acting on violations: per chat, each severity maps to an action (none, delete, warn, mute,
ban). The rules and their matching belong to the statistics app; moderation asks the core
classification service (``telegram_bot.violations``) and never imports statistics. A chat whose
severities all map to "none" (the default) costs nothing: the message is not classified here.
Admins and approved members (``telegram_bot.exemptions``) are exempt. Statistics still count
the message: this observer runs before theirs and does not stop it. An edited message is
judged again (its own update, once): clean text edited into a violation is acted on.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from moderation import services
from moderation.conf import chat_settings
from moderation.models import Action
from moderation.rights import chat_admins, is_group_id, is_member_message, is_protected
from moderation.services import Origin, Target
from telegram_bot import violations
from telegram_bot.audit import BOT, Outcome
from telegram_bot.errors import TelegramApiError
from telegram_bot.exemptions import is_exempt
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import QUIET, Foresight
from telegram_bot.state import KVStore
from telegram_bot.updates import Update


def _verdict(update: Update, store: KVStore) -> tuple[str, Action] | None:
    """The worst severity of a member's message and the chat's action for it; None when
    nothing is to be done (no violation, its action "none", not a member's message)."""
    message = update.message or update.edited_message
    if message is None or update.chat_id is None or update.command() is not None:
        return None
    if not is_group_id(update.chat_id):
        return None
    if message.from_user is None or not is_member_message(message):
        return None
    settings = chat_settings(update.chat_id)
    actions = {s: settings.violation_action(s) for s in violations.SEVERITIES}
    if all(action == Action.NONE for action in actions.values()):
        return None
    severity = violations.worst(violations.classify(message, store))
    if severity is None or actions[severity] == Action.NONE:
        return None
    if is_exempt(update.chat_id, message.from_user.id):
        return None
    return severity, actions[severity]


def foresee_violations(update: Update, store: KVStore) -> Foresight:
    """Quiet for a message without a violation to act on; else the severity and the action,
    classified once, for the handler (``Observer.foresee``)."""
    verdict = _verdict(update, store)
    return QUIET if verdict is None else Foresight(acts=True, finding=verdict)


def act_on_violations(ctx: Context) -> None:
    # The declaration's finding (classified once); without a declaration (an update the
    # pipeline did not foresee), the verdict is worked out here.
    found = ctx.foresight.finding if ctx.foresight is not None else None
    verdict: tuple[str, Action] | None
    if isinstance(found, tuple):
        verdict = found
    else:
        verdict = _verdict(ctx.update, ctx.store) if ctx.foresight is None else None
    message = ctx.update.message or ctx.update.edited_message
    if verdict is None or message is None or message.from_user is None or ctx.chat_id is None:
        return
    severity, action = verdict
    settings = chat_settings(ctx.chat_id)
    user = message.from_user
    target = Target(user.id, user.full_name, user.username or "")
    origin = Origin(ctx.chat_id, BOT, "auto", ctx.update.update_id, cause="violation")
    reason = {
        "low": _("low violation"),
        "medium": _("medium violation"),
        "high": _("high violation"),
    }.get(severity, severity)
    try:
        if is_protected(chat_admins(ctx.store, ctx.client, ctx.chat_id), user.id):
            return
        if action == Action.DELETE:
            try:
                ctx.client.delete_message(chat_id=ctx.chat_id, message_id=message.message_id)
            except TelegramApiError as exc:
                # Deleted already (a chat rule's lock or blocklist saw it first): done.
                if "message to delete not found" not in exc.description.lower():
                    raise
            services.record(
                action="delete",
                actor=BOT,
                source="auto",
                chat_id=ctx.chat_id,
                target_id=user.id,
                target_name=target.label,
                reason=reason,
                outcome=Outcome.DONE,
                detail=f"message #{message.message_id}",
                update_id=ctx.update.update_id,
            )
            return
        if action == Action.WARN:
            answer = services.warn_and_act(ctx.client, origin, target, reason)
        else:
            answer = services.penalize(
                ctx.client,
                origin=origin,
                action=action,
                target=target,
                seconds=settings.violation_action_seconds,
                reason=reason,
            )
    except TelegramApiError as exc:
        answer = services.explain(exc, target)
    ctx.reply(answer)
