"""Core handlers: /start, /help, /panel and its admin management, unknown commands."""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot import admins, ids
from telegram_bot.admins import Role
from telegram_bot.audit import update_step
from telegram_bot.errors import BotError
from telegram_bot.features import enabled_feature_configs, start_lines
from telegram_bot.numbers import ascii_int
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import ANY_COMMAND, PanelEntry, Route
from telegram_bot.privacy.handlers import forget_me, forget_me_cancel, forget_me_confirm

# ASCII digits only: str.isdigit() also accepts characters such as "²" that int() refuses.


def start_text() -> str:
    """What the bot does, from the features the enabled apps declare (composed once per
    language and set of apps: every /start sends it)."""
    key = (translation.get_language(), tuple(c.label for c in enabled_feature_configs()))
    text = _start_texts.get(key)
    if text is None:
        text = _start_texts[key] = _compose_start_text()
    return text


_start_texts: dict[tuple[str | None, tuple[str, ...]], str] = {}


def _compose_start_text() -> str:
    lines = start_lines()
    if len(lines) > 1:
        does = _("%(first)s and %(last)s") % {"first": ", ".join(lines[:-1]), "last": lines[-1]}
    else:
        does = "".join(lines)
    intro = (
        _("Hello! I run this community: %(features)s.") % {"features": does}
        if lines
        else _("Hello!")
    )
    return intro + "\n" + _("Send /help to see what you can do here.")


def start(ctx: Context) -> None:
    ctx.reply(start_text())


def help_command(ctx: Context) -> None:
    lines = [
        f"/{route.command} - {route.help}" for route in ctx.router.commands_for(ctx.sender.role)
    ]
    ctx.reply(_("Commands you can use:") + "\n" + "\n".join(lines))


def unknown_command(ctx: Context) -> None:
    # In groups other bots' commands are common: stay silent there.
    if ctx.in_private:
        ctx.reply(_("I don't know that command. Send /help for the list."))


# --- panel ----------------------------------------------------------------------------------
def panel(ctx: Context) -> None:
    ctx.reply(_("Admin panel"), reply_markup=panel_keyboard(ctx))


def panel_home(ctx: Context) -> None:
    ctx.answer_callback()
    ctx.edit_callback_message(_("Admin panel"), reply_markup=panel_keyboard(ctx))


def panel_keyboard(ctx: Context) -> dict[str, Any]:
    entries = ctx.router.panel_for(ctx.sender.role)
    rows = [[{"text": str(entry.title), "callback_data": entry.callback_data}] for entry in entries]
    return {"inline_keyboard": rows}


def panel_admins(ctx: Context) -> None:
    ctx.answer_callback()
    text, markup = admins_view(ctx)
    ctx.edit_callback_message(text, reply_markup=markup)


def admins_view(ctx: Context) -> tuple[str, dict[str, Any]]:
    configured = admins.configured_admin_ids()
    lines, rows = [_("Admins:")], []
    for admin_id in admins.listed_admin_ids():
        label = (
            _("owner")
            if admins.is_owner(admin_id)
            else (_("environment") if admin_id in configured else _("added"))
        )
        lines.append(f"{admin_id} ({label})")
        if ctx.sender.is_owner and admin_id not in configured:
            rows.append(
                [
                    {
                        "text": _("Remove %(id)s") % {"id": admin_id},
                        "callback_data": f"panel:adm_rm:{admin_id}",
                    }
                ]
            )
    lines.append("\n" + _("The owner adds admins with /addadmin <user id>."))
    rows.append([{"text": _("Back"), "callback_data": "panel:home"}])
    return "\n".join(lines), {"inline_keyboard": rows}


def panel_admin_remove(ctx: Context) -> None:
    raw_id = ctx.update.callback_data.removeprefix("panel:adm_rm:")
    user_id = ascii_int(raw_id)
    if user_id is None:
        ctx.answer_callback(_("This button is not valid."), alert=True)
        return
    try:
        with update_step(ctx.update, "admin.remove", source="panel", target_id=user_id):
            admins.admin_remove(telegram_id=user_id, removed_by=ctx.sender.user_id)
    except BotError as exc:
        ctx.answer_callback(str(exc.user_message), alert=True)
        return
    ctx.answer_callback(_("Removed %(id)s.") % {"id": raw_id})
    text, markup = admins_view(ctx)
    ctx.edit_callback_message(text, reply_markup=markup)


def add_admin(ctx: Context) -> None:
    """``/addadmin <user id>``: a person's id (``ids.parse_person_id``: 1..2**52-1, not one of
    Telegram's stand-in accounts), refused before anything is recorded."""
    args = ctx.command.args if ctx.command else ""
    try:
        user_id = ids.parse_person_id(args)
    except ids.IdError as exc:
        ctx.reply(_("Usage: /addadmin <user id>") + "\n" + str(exc.user_message))
        return
    try:
        with update_step(ctx.update, "admin.add", source="command", target_id=user_id):
            admins.admin_add(telegram_id=user_id, added_by=ctx.sender.user_id)
    except BotError as exc:
        ctx.reply(str(exc.user_message))
        return
    ctx.reply(_("%(id)s is now an admin.") % {"id": user_id})


def remove_admin(ctx: Context) -> None:
    # Any id the admin rows may hold (the panel's button too): removing is how a row added
    # before ids were checked goes; an id that is no admin is answered "Not an admin.".
    args = ctx.command.args if ctx.command else ""
    user_id = ascii_int(args)
    if user_id is None:
        ctx.reply(_("Usage: /removeadmin <user id>"))
        return
    try:
        with update_step(ctx.update, "admin.remove", source="command", target_id=user_id):
            admins.admin_remove(telegram_id=user_id, removed_by=ctx.sender.user_id)
    except BotError as exc:
        ctx.reply(str(exc.user_message))
        return
    ctx.reply(_("%(id)s is no longer an admin.") % {"id": args})


ROUTES = [
    Route.on_command("start", start, help=gettext_lazy("introduction")),
    Route.on_command("help", help_command, help=gettext_lazy("this list")),
    Route.on_command(
        "panel", panel, role=Role.ADMIN, help=gettext_lazy("admin panel"), chat_types=("private",)
    ),
    Route.on_command(
        "addadmin",
        add_admin,
        role=Role.OWNER,
        help=gettext_lazy("add an admin (owner)"),
        chat_types=("private",),
    ),
    Route.on_command(
        "removeadmin",
        remove_admin,
        role=Role.OWNER,
        help=gettext_lazy("remove an admin (owner)"),
        chat_types=("private",),
    ),
    Route.on_callback("panel:home", panel_home, role=Role.ADMIN),
    Route.on_callback("panel:admins", panel_admins, role=Role.ADMIN),
    Route.on_callback("panel:adm_rm:", panel_admin_remove, role=Role.OWNER),
    Route.on_command(
        "forgetme",
        forget_me,
        help=gettext_lazy("erase what the bot holds about you"),
        chat_types=("private",),
    ),
    Route.on_callback("fm:y:", forget_me_confirm, expensive=True),
    Route.on_callback("fm:n:", forget_me_cancel),
    Route.on_command(ANY_COMMAND, unknown_command),
]

PANEL_ENTRIES = [PanelEntry(gettext_lazy("Admins"), "panel:admins", order=900)]
