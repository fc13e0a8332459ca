"""Features are registered by their apps; the core names none of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.utils import translation

from telegram_bot import features, handlers
from telegram_bot.handlers import start_text
from telegram_bot.pipeline.router import build_router, get_router
from telegram_bot.state.keys import FAMILIES, check_key, declare_families, family_owner

CORE = Path(__file__).resolve().parents[3] / "telegram_bot"


def feature_labels() -> set[str]:
    return {config.label for config in features.feature_configs()} - {"telegram_bot"}


def test_the_installed_feature_apps_contribute_in_installed_apps_order() -> None:
    labels = [config.label for config in features.feature_configs()]
    assert labels == [
        "telegram_bot",
        "support",
        "community",
        "content",
        "moderation",
        "rules",
        "stats",
        "webapp",
        "broadcasts",
    ]
    modules = [module.__name__ for module in features.handler_modules()]
    # The chat rules are an app of their own inside the moderation package.
    packages = {"rules": "moderation.rules"}
    assert modules == [f"{packages.get(label, label)}.handlers" for label in labels]
    assert [label for label, _ in features.api_modules()] == ["community", "stats"]
    router = get_router()
    assert "stats.count" in [observer.name for observer in router.observers]
    assert {"support.deliver", "content.publish"} <= set(
        kind for declared in features.job_handler_maps() for kind in declared
    )


def test_start_names_what_the_installed_features_do() -> None:
    assert start_text().startswith(
        "Hello! I run this community: support, members (join requests, welcome, captcha), "
        "channel posts, moderation (/warn, /mute, /ban... in groups), chat rules (/lock, "
        "/addblocklist, /approve, /save, /filter, /report, /fban in groups), statistics and news "
        "for subscribers (/stop to opt out)."
    )


def test_an_app_declares_its_own_key_families() -> None:
    assert family_owner("stats") == "stats" and family_owner("msg") == "stats"
    assert family_owner("upd") == "telegram_bot"
    check_key("last_message:-1:2")
    with pytest.raises(ValueError, match="already stats's"):
        declare_families("support", {"stats": "mine now"})
    with pytest.raises(ValueError, match="key family"):
        declare_families("support", {"Bad Family": "x"})
    declare_families("stats", {"stats": FAMILIES["stats"]})  # the same app again: no change


def test_a_router_is_built_from_any_handler_modules() -> None:
    router = build_router(["bench.noop_handlers"])
    assert [route.handler.__name__ for route in router.routes] == ["noop"]


def _names_in(path: Path) -> list[tuple[int, str]]:
    """Imports and string constants of a module that name a feature app."""
    labels = feature_labels()
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(), str(path))
    # A dict key such as OpenAPI's "content" is a word, not a reference to an app.
    dict_keys = {
        id(key) for node in ast.walk(tree) if isinstance(node, ast.Dict) for key in node.keys
    }
    for node in ast.walk(tree):
        if id(node) in dict_keys:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value]
        else:
            continue
        for name in names:
            head = name.split(".")[0].split(":")[0]
            if head in labels and (name == head or name[len(head)] in ".:"):
                found.append((node.lineno, name))
    return found


def test_no_core_module_names_a_feature_app_not_even_by_a_string() -> None:
    offenders = {
        str(path.relative_to(CORE.parent)): names
        for path in sorted(CORE.rglob("*.py"))
        if "migrations" not in path.parts and (names := _names_in(path))
    }
    assert offenders == {}


def test_the_start_text_is_composed_once_per_language(monkeypatch: pytest.MonkeyPatch) -> None:
    composed: list[str | None] = []
    compose = handlers._compose_start_text

    def counting() -> str:
        composed.append(translation.get_language())
        return compose()

    monkeypatch.setattr(handlers, "_start_texts", {})
    monkeypatch.setattr(handlers, "_compose_start_text", counting)
    with translation.override("en"):
        english = [start_text() for _ in range(3)]
    with translation.override("ru"):
        russian = start_text()
    assert composed == ["en", "ru"]
    assert english == [english[0]] * 3 and english[0].startswith("Hello!")
    assert russian != english[0]
