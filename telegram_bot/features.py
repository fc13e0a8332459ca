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
- ``metrics``: a function yielding Prometheus metric families of the app's state, read at
  each scrape of ``/metrics`` (``config/metrics.py``);
- ``chat_titles``: a function of chat ids returning the titles the app knows (``{id: title}``),
  so that the core's pages name chats;
- ``chats``: a function (no arguments) returning every chat the app knows (``{id: title}``,
  the title blank when unknown): the console's chat choosers offer them (``known_chats``);
- ``chat_figures``: a function of the user returning the app's today-so-far figures split by
  chat (``telegram_bot.overview.ChatFigure``), for the overview's "Today by chat" page;
- ``people_names``: a function of user ids returning the names the app knows
  (``{id: (name, username)}``), so that the console's lists name people (``people_names``);
- ``member_sections``: a function ``(request, member)`` (a ``Member``: one person in one chat)
  returning the app's ``MemberSection`` of the member page, or None (nothing to show, or the
  user may not view it); the page that shows one member collects them with
  ``member_sections`` and so names no other app;
- ``insight_active_users`` and ``insight_growth``: figures the app offers the others, an
  ``ActiveUsers`` function and a ``Growth`` (``telegram_bot.insights``);
- ``member_page``: the name of the admin page (``register_view``) that shows one member of one
  chat, its arguments the chat id and the user id, so that the core's pages (the audit log)
  link people to it (``member_page_name``);

and as values: ``key_families`` (the KV key families it owns, declared to the state layer when
the app is ready), ``console_sections`` (where its admin pages sit in the console's navigation:
a section's key from ``telegram_bot.ops.navigation`` to its entries, models as
``app_label.modelname`` and pages as ``view:<name>``), ``audit_phrases`` (its audit actions as
sentences for the audit log: ``{"warn": gettext_lazy("{actor} warned {target}")}``, with
``{detail}`` where the entry's detail belongs), ``chat_settings_models`` (its models of one row
per chat, keyed by ``chat_id``, that follow a group to the supergroup Telegram upgrades it to:
``telegram_bot.chat_migration``) and ``start_line`` (what ``/start`` says the bot does for it;
``/help`` lists the commands with help text from the routes themselves). Adding a feature is
adding its app to ``INSTALLED_APPS``; the core names no feature. The order of ``INSTALLED_APPS``
is the routing order.

``FEATURES_DISABLED`` (app labels) switches features off without a code change: every
collector here leaves them out, so their handlers, observers and panel entries are not routed
(their commands fall to the unknown-command answer; ``/start`` and ``/help`` no longer name
them), ``sync_schedules`` removes their schedules, their admin pages are not listed and answer
404 (``telegram_bot.ops.admin_site``), their API routes are not mounted (``config/api.py``) and
their overview cards are not shown. What stays true of data they hold stays on: their key
families, privacy hooks (export, erasure, retention) and chat migration see every installed app
(``feature_configs``), and jobs already queued still run (``job_handler_maps``); nothing new
is queued for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from types import ModuleType
from typing import Any, ClassVar

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
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
    metrics: ClassVar[str | None] = None
    key_families: ClassVar[Mapping[str, str]] = {}
    console_sections: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    audit_phrases: ClassVar[Mapping[str, str | Promise]] = {}
    chat_titles: ClassVar[str | None] = None
    chats: ClassVar[str | None] = None
    people_names: ClassVar[str | None] = None
    chat_figures: ClassVar[str | None] = None
    member_sections: ClassVar[str | None] = None
    member_page: ClassVar[str | None] = None
    insight_active_users: ClassVar[str | None] = None
    insight_growth: ClassVar[str | None] = None
    chat_settings_models: ClassVar[tuple[str, ...]] = ()
    start_line: ClassVar[str | Promise] = ""

    def ready(self) -> None:
        declare_families(self.label, self.key_families)


@dataclass(frozen=True)
class Member:
    """One person in one chat, as the member page names them (``name`` and ``username`` may
    be empty when no app knows them)."""

    chat_id: int
    user_id: int
    name: str = ""
    username: str = ""
    chat_title: str = ""

    @property
    def label(self) -> str:
        return self.name or (f"@{self.username}" if self.username else f"#{self.user_id}")


@dataclass(frozen=True)
class MemberSection:
    """An app's part of the member page: a heading, its HTML (rendered by the app, escaped
    there) and a key (the section's id in the page)."""

    key: str
    title: str
    html: str


def feature_configs() -> list[FeatureConfig]:
    """Every contributing app, in ``INSTALLED_APPS`` order, disabled ones included: for what
    holds of their data (privacy, chat migration, metrics). Contributions are collected from
    ``enabled_feature_configs``."""
    return [config for config in apps.get_app_configs() if isinstance(config, FeatureConfig)]


def enabled_feature_configs() -> list[FeatureConfig]:
    """The contributing apps that ``FEATURES_DISABLED`` leaves on, in ``INSTALLED_APPS`` order."""
    disabled = disabled_labels()
    return [config for config in feature_configs() if config.label not in disabled]


def disabled_labels() -> frozenset[str]:
    """``FEATURES_DISABLED``, each an installed feature app other than the core."""
    labels = frozenset(settings.FEATURES_DISABLED)
    if labels and not labels <= _switchable_labels():
        unknown = ", ".join(sorted(labels - _switchable_labels()))
        known = ", ".join(sorted(_switchable_labels()))
        raise ImproperlyConfigured(
            f"FEATURES_DISABLED: no feature {unknown}; the features are {known}"
        )
    return labels


def is_enabled(label: str) -> bool:
    """Whether the app ``label`` is on (any app that is not a disabled feature is)."""
    return label not in disabled_labels()


def owner_label(module_name: str) -> str | None:
    """The label of the installed app whose package holds ``module_name``, or None."""
    config = apps.get_containing_app_config(module_name)
    return config.label if config is not None else None


def _switchable_labels() -> set[str]:
    core = owner_label(__name__)
    return {config.label for config in feature_configs() if config.label != core}


def handler_modules() -> list[ModuleType]:
    return [
        import_module(config.bot_handlers)
        for config in enabled_feature_configs()
        if config.bot_handlers
    ]


def job_handler_maps() -> list[Mapping[str, Any]]:
    """Every installed app's job kinds, disabled ones included: a job queued before its feature
    was switched off still runs (or fails) as declared, instead of failing as unknown."""
    return [
        import_string(config.job_handlers) for config in feature_configs() if config.job_handlers
    ]


def schedule_lists() -> list[list[Any]]:
    return [
        import_string(config.schedules) for config in enabled_feature_configs() if config.schedules
    ]


def api_modules() -> list[tuple[str, ModuleType]]:
    """``(app label, API module)`` of every enabled app with an API."""
    return [
        (config.label, import_module(config.api_module))
        for config in enabled_feature_configs()
        if config.api_module
    ]


def console_sections() -> dict[str, list[str]]:
    """The console's sections' entries contributed by the enabled features, in the order of
    ``INSTALLED_APPS``."""
    found: dict[str, list[str]] = {}
    for config in enabled_feature_configs():
        for section, entries in config.console_sections.items():
            found.setdefault(section, []).extend(entries)
    return found


def audit_phrases() -> dict[str, str | Promise]:
    """Every installed app's audit actions as sentences (disabled ones too: their entries stay
    in the log)."""
    found: dict[str, str | Promise] = {}
    for config in feature_configs():
        found.update(config.audit_phrases)
    return found


def chat_titles(chat_ids: Iterable[int]) -> dict[int, str]:
    """The titles the installed apps know of ``chat_ids`` (the first app's that has one)."""
    wanted = {chat_id for chat_id in chat_ids if chat_id is not None}
    found: dict[int, str] = {}
    for config in feature_configs():
        if not wanted - found.keys():
            break
        if config.chat_titles:
            titles = import_string(config.chat_titles)(wanted - found.keys())
            found.update((chat_id, title) for chat_id, title in titles.items() if title)
    return found


def known_chats() -> dict[int, str]:
    """Every chat the installed apps know, with the first title one of them has (blank when
    none has)."""
    found: dict[int, str] = {}
    for config in feature_configs():
        if config.chats:
            for chat_id, title in import_string(config.chats)().items():
                if title and not found.get(chat_id):
                    found[chat_id] = title
                else:
                    found.setdefault(chat_id, "")
    return found


def people_names(user_ids: Iterable[int | None]) -> dict[int, tuple[str, str]]:
    """The names the installed apps know of ``user_ids``: ``{id: (name, username)}``, the
    first app's that has a name or a username."""
    wanted = {user_id for user_id in user_ids if user_id is not None}
    found: dict[int, tuple[str, str]] = {}
    for config in feature_configs():
        if not wanted - found.keys():
            break
        if config.people_names:
            names = import_string(config.people_names)(wanted - found.keys())
            found.update((key, value) for key, value in names.items() if any(value))
    return found


def member_sections(request: Any, member: Member) -> list[MemberSection]:
    """The enabled apps' sections of ``member``'s page that ``request``'s user may see, in
    the order of ``INSTALLED_APPS``."""
    found = []
    for config in enabled_feature_configs():
        if config.member_sections:
            section = import_string(config.member_sections)(request, member)
            if section is not None:
                found.append(section)
    return found


def member_page_name() -> str | None:
    """The admin page name of the member page (the first enabled app's that has one)."""
    for config in enabled_feature_configs():
        if config.member_page:
            return config.member_page
    return None


def metric_collectors() -> list[tuple[str, Callable[[], Iterable[Any]]]]:
    """``(app label, collect)`` of every installed app reporting state to ``/metrics``,
    disabled ones included (their data is still there)."""
    return [
        (config.label, import_string(config.metrics))
        for config in feature_configs()
        if config.metrics
    ]


def start_lines() -> list[str]:
    return [str(config.start_line) for config in enabled_feature_configs() if config.start_line]
