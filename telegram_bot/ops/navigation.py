"""The console's navigation: the start page and the sidebar grouped as an operator works
(members, moderation, support, posts, statistics, settings), with the engineers' tables under
"System" at the end, in place of Django's one group per app.

A section lists models (``app_label.modelname``) and pages registered with ``register_view``
(``view:<name>``): the core's own here, a feature's in its AppConfig's ``console_sections`` (the
core names no feature). A model no section names is shown under its own app's name before
"System", so a new feature's pages appear without an edit here. Only what the user may open is
listed: the entries come from Django's own app list (``AdminSite.get_app_list``), which has
already checked their permissions.

The same sections feed django-unfold's sidebar (``sidebar``, ``UNFOLD["SIDEBAR"]`` in the
settings), after a "Today" group that opens on the overview.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.html import conditional_escape
from django.utils.translation import gettext_lazy

from telegram_bot import features


@dataclass(frozen=True)
class Section:
    key: str
    title: str | Promise
    entries: tuple[str, ...]  # the core's own pages; the features' come first (or after, in System)
    core_first: bool = False


# A section's key is what a feature's ``console_sections`` names (``telegram_bot.features``).
MEMBERS, SAFETY, DESK, POSTS, STATISTICS, SETTINGS, SYSTEM = (
    "members",
    "safety",
    "desk",
    "posts",
    "statistics",
    "settings",
    "system",
)

SECTIONS: tuple[Section, ...] = (
    Section(
        MEMBERS,
        gettext_lazy("Community and members"),
        ("view:privacy-export", "view:privacy-erase"),
    ),
    Section(SAFETY, gettext_lazy("Moderation"), ("telegram_bot.auditentry",)),
    Section(DESK, gettext_lazy("Support"), ()),
    Section(POSTS, gettext_lazy("Posts"), ()),
    Section(STATISTICS, gettext_lazy("Statistics"), ()),
    Section(
        SETTINGS,
        gettext_lazy("Settings"),
        ("telegram_bot.chatpreference", "telegram_bot.botadmin", "auth.user", "auth.group"),
    ),
    Section(
        SYSTEM,
        gettext_lazy("System"),
        (
            "view:dead-letters",
            "telegram_bot.job",
            "telegram_bot.deliveryfailure",
            "telegram_bot.blockedchat",
        ),
        core_first=True,
    ),
)

# Apps whose unlisted models belong to the engineers' section rather than a group of their own.
SYSTEM_APPS = frozenset({"django_q", "axes", "telegram_bot", "auth", "sites"})


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


def grouped(
    apps: list[dict[str, Any]],
    views: dict[str, dict[str, Any]],
    contributed: Mapping[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """Django's app list (``apps``) and the pages the user may open (``views``, by name) as
    the sections above, each in the shape of an app of the list; empty sections are left out.
    ``contributed`` is the features' entries by section (by default from their AppConfigs)."""
    if contributed is None:
        contributed = features.console_sections()
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
        theirs = tuple(contributed.get(section.key, ()))
        ordered = section.entries + theirs if section.core_first else theirs + section.entries
        for entry in ordered:
            if entry.startswith("view:"):
                row = views.get(entry.removeprefix("view:"))
            elif entry in placed:  # a model is listed once, where it is first named
                continue
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


def sidebar(request: HttpRequest) -> list[dict[str, Any]]:
    """``UNFOLD["SIDEBAR"]["navigation"]``: "Today" (the overview), then the sections the user
    may open (the site's app list, ``grouped`` above), each a group of links; "System", the
    engineers', folds."""
    from django.contrib import admin

    groups: list[dict[str, Any]] = [
        {
            "title": gettext_lazy("Today"),
            "items": [
                {
                    "title": gettext_lazy("Overview"),
                    "link": reverse("admin:index"),
                }
            ],
        }
    ]
    for app in admin.site.get_app_list(request):
        key = str(app["app_label"]).removeprefix("section-")
        groups.append(
            {
                "title": conditional_escape(app["name"]),
                "collapsible": key == SYSTEM,
                "items": [
                    # unfold marks an item's title safe: escaped here.
                    {"title": conditional_escape(row["name"]), "link": row["admin_url"]}
                    for row in app["models"]
                    if row.get("admin_url")
                ],
            }
        )
    return groups
