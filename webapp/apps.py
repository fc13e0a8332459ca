from __future__ import annotations

from django.utils.translation import gettext_lazy

from telegram_bot import features


class WebappConfig(features.FeatureConfig):
    """The Mini App (``/app/``): a group's own Telegram admins manage their chat, signed in by
    Telegram (webapp/README.md)."""

    name = "webapp"
    verbose_name = gettext_lazy("Mini App")
    bot_handlers = "webapp.handlers"
    privacy = "webapp.privacy"
    key_families = {
        "miniapp": "Mini App sessions (s:), used logins (seen:), admin lists (adm:), "
        "login and change budgets (rl:), one-time form keys (once:)",
    }

    def ready(self) -> None:
        super().ready()
        from django.core.checks import register

        from webapp.checks import public_url_served

        register(public_url_served)
