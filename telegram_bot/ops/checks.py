"""System checks run at start (``manage.py check``, ``migrate``, ``runbot``, the run command)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register

from telegram_bot.admins import check_admin_configuration


@register()
def admin_configuration(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    return [Error(problem, id="telegram_bot.E001") for problem in check_admin_configuration()]
