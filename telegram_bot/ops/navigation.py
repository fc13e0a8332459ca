"""The console's navigation: the start page and the sidebar grouped as an operator works
(members, moderation, support, posts, statistics, settings), with the engineers' tables under
"System" at the end, in place of Django's one group per app.

A section lists models (``app_label.modelname``) and pages registered with ``register_view``
(``view:<name>``). A model no section names is shown under its own app's name before "System",
so a new feature's pages appear without an edit here. Only what the user may open is listed:
the entries come from Django's own app list (``AdminSite.get_app_list``), which has already
checked their permissions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy


@dataclass(frozen=True)
class Section:
    key: str
    title: str | Promise
    entries: tuple[str, ...]


SYSTEM = "system"

SECTIONS: tuple[Section, ...] = (
    Section(
        "members",
        gettext_lazy("Community and members"),
        (
            "view:community-join-requests",
            "community.botchat",
            "community.membermovement",
            "view:privacy-export",
            "view:privacy-erase",
        ),
    ),
    Section(
        "moderation",
        gettext_lazy("Moderation"),
        ("moderation.warning", "telegram_bot.auditentry", "stats.violationrule"),
    ),
    Section("support", gettext_lazy("Support"), ("support.ticket",)),
    Section("posts", gettext_lazy("Posts"), ("content.post",)),
    Section("statistics", gettext_lazy("Statistics"), ("view:stats-dashboard",)),
    Section(
        "settings",
        gettext_lazy("Settings"),
        (
            "community.chatpolicy",
            "community.memberpolicy",
            "moderation.chatsettings",
            "stats.statssettings",
            "telegram_bot.chatpreference",
            "telegram_bot.botadmin",
            "auth.user",
            "auth.group",
        ),
    ),
    Section(
        SYSTEM,
        gettext_lazy("System"),
        (
            "view:dead-letters",
            "telegram_bot.job",
            "telegram_bot.deliveryfailure",
            "telegram_bot.blockedchat",
            "stats.dailycoverage",
            "stats.backfillstate",
            "stats.dailyuserstat",
        ),
    ),
)

# Apps whose unlisted models belong to the engineers' section rather than a group of their own.
SYSTEM_APPS = frozenset({"django_q", "axes", "telegram_bot", "stats", "auth", "sites"})


def view_entry(name: str, title: str | Promise, url: str) -> dict[str, Any]:
    """A page registered with ``register_view`` as a row of the app list (the shape Django's
    ``admin/app_list.html`` reads)."""
    return {
        "name": title,
        "object_name": f"view-{name}",
        "admin_url": url,
        "add_url": None,
        "view_only": True,
        "perms": {"view": True},
    }


def grouped(apps: list[dict[str, Any]], views: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Django's app list (``apps``) and the pages the user may open (``views``, by name) as
    the sections above, each in the shape of an app of the list; empty sections are left out."""
    models: dict[str, dict[str, Any]] = {}
    own_app: dict[str, dict[str, Any]] = {}
    for app in apps:
        for model in app["models"]:
            key = f"{app['app_label']}.{model['object_name'].lower()}"
            models[key] = model
            own_app[key] = app
    placed: set[str] = set()
    sections: list[dict[str, Any]] = []
    for section in SECTIONS:
        rows = []
        for entry in section.entries:
            if entry.startswith("view:"):
                row = views.get(entry.removeprefix("view:"))
            else:
                row = models.get(entry)
                placed.add(entry)
            if row is not None:
                rows.append(row)
        if section.key == SYSTEM:
            for key, model in models.items():
                if key not in placed and own_app[key]["app_label"] in SYSTEM_APPS:
                    rows.append(model)
                    placed.add(key)
            sections.extend(_own_groups(apps, placed))
        if rows:
            sections.append(_section(section.key, section.title, rows))
    return sections


def _own_groups(apps: list[dict[str, Any]], placed: set[str]) -> list[dict[str, Any]]:
    """The models no section names, under their app's own name (a feature added later)."""
    groups = []
    for app in apps:
        rows = [
            model
            for model in app["models"]
            if f"{app['app_label']}.{model['object_name'].lower()}" not in placed
        ]
        if rows:
            groups.append({**app, "models": rows})
    return groups


def _section(key: str, title: str | Promise, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": title,
        "app_label": f"section-{key}",
        "app_url": rows[0]["admin_url"] or "",
        "has_module_perms": True,
        "models": rows,
    }
