"""``/forgetme``: a member erases everything the bot holds about them, from a private chat.

The command asks first (an Erase / Cancel keyboard); the confirmation lives in
``lock:forget:<token>`` (10 minutes), the token in the buttons. A press moves it from
pending to erasing by compare-and-set, naming its update: of two presses one wins, the other
is told the erasure is under way; a re-delivery of the winning press (after a crash) finds
its own update there and resumes the erasure, which is idempotent. The audit entry is unique
on the update, so it is recorded once. The finished erasure deletes the confirmation.
"""

from __future__ import annotations

import logging
import re
import secrets

from django.utils.translation import gettext as _

from telegram_bot.audit import Actor
from telegram_bot.pipeline.context import Context
from telegram_bot.privacy import CONFIRM_PREFIX, ErasureDeferred, erase_user

log = logging.getLogger(__name__)
CONFIRM_TTL_MS = 10 * 60 * 1000
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16}")
SELF_SERVICE = Actor(None, "the member (/forgetme)")


def forget_me(ctx: Context) -> None:
    token = secrets.token_urlsafe(12)
    ctx.store.set(
        f"{CONFIRM_PREFIX}{token}",
        {"user": ctx.sender.user_id, "state": "pending"},
        CONFIRM_TTL_MS,
    )
    keyboard = [
        [{"text": _("Erase my data"), "callback_data": f"fm:y:{token}"}],
        [{"text": _("Cancel"), "callback_data": f"fm:n:{token}"}],
    ]
    ctx.reply(
        _(
            "This erases what this bot holds about you: your statistics become anonymous, "
            "your support tickets lose their content, your join requests, warnings and "
            "sessions are removed. It cannot be undone. Messages you send later are counted "
            "again."
        ),
        reply_markup={"inline_keyboard": keyboard},
    )


def forget_me_confirm(ctx: Context) -> None:
    answer = _confirmation(ctx)
    if answer is not None:
        ctx.answer_callback(answer, alert=True)
        return
    user_id = ctx.sender.user_id
    assert user_id is not None  # _confirmation checked the presser
    # Answered first: an erasure walks the KV store and may outlast the press's answer window
    # (measured: 12 s with 200,000 other keys), after which Telegram refuses the answer.
    ctx.answer_callback_quietly(_("Erasing your data..."))
    try:
        erase_user(user_id, actor=SELF_SERVICE, source="button", update_id=ctx.update.update_id)
    except ErasureDeferred as exc:
        # Something about them is still to be carried out (a moderators' action, a captcha,
        # a join request's decision): erasing now would cancel it. Nothing was erased; the
        # confirmation is spent, a later /forgetme asks again.
        log.info("erasure deferred: %s", exc)
        ctx.store.delete(_record(ctx)[0])
        ctx.edit_callback_message(
            _(
                "Nothing was erased yet: something about you in a chat is still to be carried "
                "out (a captcha, a join request, an action of its moderators). Send /forgetme "
                "again in a few minutes."
            )
        )
        return
    ctx.edit_callback_message(_("Everything this bot held about you has been erased."))


def forget_me_cancel(ctx: Context) -> None:
    key, record = _record(ctx)
    if record is not None and record.get("state") == "pending":
        ctx.store.compare_and_set(key, record, {**record, "state": "cancelled"}, CONFIRM_TTL_MS)
    ctx.answer_callback()
    ctx.edit_callback_message(_("Cancelled: nothing was erased."))


def _confirmation(ctx: Context) -> str | None:
    """None when this press may erase (it won the confirmation, or is a re-delivery of the
    press that did); else what to tell the presser."""
    key, record = _record(ctx)
    update_id = ctx.update.update_id
    for _attempt in range(5):
        if record is None or record.get("state") == "cancelled":
            return _("Nothing to confirm: send /forgetme again.")
        if record.get("state") == "erasing":
            if record.get("update") == update_id:
                return None
            return _("Your data is being erased already.")
        if ctx.store.compare_and_set(
            key, record, {**record, "state": "erasing", "update": update_id}, CONFIRM_TTL_MS
        ):
            return None
        record = ctx.store.get(key)
    return _("Please try again.")


def _record(ctx: Context) -> tuple[str, dict | None]:
    token = ctx.update.callback_data[len("fm:y:") :]
    if not _TOKEN.fullmatch(token) or not ctx.in_private:
        return "", None
    key = f"{CONFIRM_PREFIX}{token}"
    record = ctx.store.get(key)
    if not isinstance(record, dict) or record.get("user") != ctx.sender.user_id:
        return key, None
    return key, record
