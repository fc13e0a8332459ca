"""``/settings`` in a group: its admin gets a button that opens the Mini App on that chat.

Telegram allows ``web_app`` buttons only in private chats, so in a group the button is a URL
button with the Mini App's direct link, ``https://t.me/<bot>?startapp=<chat id>``: Telegram
opens the bot's main Mini App (set with BotFather) inside the client, hands it a signed
``initData`` whose ``start_param`` is the chat id, and the app opens that chat's page. A
``login_url`` button would also work but needs the site's domain linked to the bot
(BotFather ``/setdomain``) and opens a browser outside Telegram; the direct link needs only the
main Mini App (docs/operations.md, "The Mini App").
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot.bot import bot_username
from telegram_bot.errors import TelegramApiError
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import Observer, PanelEntry, Route
from webapp.access import is_admin_member

GROUPS = ("group", "supergroup")


def settings_command(ctx: Context) -> None:
    chat_id, user = ctx.chat_id, ctx.update.user
    if chat_id is None or user is None:
        return
    try:
        member = ctx.client.get_chat_member(chat_id=chat_id, user_id=user.id)
    except TelegramApiError:
        return
    if not is_admin_member(member):
        ctx.reply(_("Only the chat's admins can do that."))
        return
    username = bot_username()
    if not settings.MINIAPP_PUBLIC_URL or not username:
        ctx.reply(_("The Mini App is not set up on this server yet (MINIAPP_PUBLIC_URL)."))
        return
    link = f"https://t.me/{username}?startapp={chat_id}"
    ctx.reply(
        _("Manage this chat in the app:"),
        reply_markup={"inline_keyboard": [[{"text": _("Open settings"), "url": link}]]},
    )


OBSERVERS: list[Observer] = []
ROUTES: list[Route] = [
    Route.on_command(
        "settings",
        settings_command,
        chat_types=GROUPS,
        help=gettext_lazy("open this chat's settings in the Mini App (for its admins)"),
    ),
]
PANEL_ENTRIES: list[PanelEntry] = []
