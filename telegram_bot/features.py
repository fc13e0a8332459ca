"""The feature registry: what each installed app contributes to the bot, read from its AppConfig.

An app that contributes subclasses ``FeatureConfig`` in its ``apps.py`` and declares, as dotted
paths imported when first needed (never at app-loading time):

- ``bot_handlers``: a module exporting ``ROUTES``, ``OBSERVERS`` and ``PANEL_ENTRIES``;
- ``job_handlers``: a ``{"kind": handler}`` mapping (``telegram_bot.jobs``);
- ``schedules``: a list of ``ScheduleSpec`` (``manage.py sync_schedules``);
- ``api_module``: a module with a django-ninja ``router`` and the ``PERMISSION`` it needs,
  mounted at ``/api/v1/<app label>/`` (``config/api.py``);
- ``overview_cards``: a function of the user returning the app's cards for the admin index
  (``telegram_bot.overview``);
- ``privacy``: a module declaring the app's personal data (tables, key families) with its
  export, erasure and retention hooks (``telegram_bot.privacy``);

and as values: ``key_families`` (the KV key families it owns, declared to the state layer
when the app is ready), ``chat_settings_models`` (its models of one row per chat, keyed by
``chat_id``, that follow a group to the supergroup Telegram upgrades it to:
``telegram_bot.chat_migration``) and ``start_line`` (what ``/start`` says the bot does for
it; ``/help`` lists the commands with help text from the routes themselves). Adding a
feature is adding its app to ``INSTALLED_APPS``; the core names no feature. The order of
``INSTALLED_APPS`` is the routing order.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from typing import Any, ClassVar

from django.apps import AppConfig, apps
from django.utils.functional import Promise
from django.utils.module_loading import import_string

from telegram_bot.state.keys import declare_families


class FeatureConfig(AppConfig):
    """The AppConfig of an app that contributes to the bot (see the module docstring)."""

    bot_handlers: ClassVar[str | None] = None
    job_handlers: ClassVar[str | None] = None
    schedules: ClassVar[str | None] = None
    api_module: ClassVar[str | None] = None
    overview_cards: ClassVar[str | None] = None
    privacy: ClassVar[str | None] = None
    key_families: ClassVar[Mapping[str, str]] = {}
    chat_settings_models: ClassVar[tuple[str, ...]] = ()
    start_line: ClassVar[str | Promise] = ""

    def ready(self) -> None:
        declare_families(self.label, self.key_families)


def feature_configs() -> list[FeatureConfig]:
    """The contributing apps, in ``INSTALLED_APPS`` order."""
    return [config for config in apps.get_app_configs() if isinstance(config, FeatureConfig)]


def handler_modules() -> list[ModuleType]:
    return [
        import_module(config.bot_handlers) for config in feature_configs() if config.bot_handlers
    ]


def job_handler_maps() -> list[Mapping[str, Any]]:
    return [
        import_string(config.job_handlers) for config in feature_configs() if config.job_handlers
    ]


def schedule_lists() -> list[list[Any]]:
    return [import_string(config.schedules) for config in feature_configs() if config.schedules]


def api_modules() -> list[tuple[str, ModuleType]]:
    """``(app label, API module)`` of every app with an API."""
    return [
        (config.label, import_module(config.api_module))
        for config in feature_configs()
        if config.api_module
    ]


def start_lines() -> list[str]:
    return [str(config.start_line) for config in feature_configs() if config.start_line]
