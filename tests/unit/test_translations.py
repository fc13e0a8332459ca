"""The catalogues: every message has its Russian translation, the compiled catalogue is the
current one, and no text the bot sends is left out of gettext."""

from __future__ import annotations

import ast
import gettext
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PO = ROOT / "locale" / "ru" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
PLACEHOLDER = re.compile(r"%\((\w+)\)[sdr]|\{\w*\}")


@dataclass
class Entry:
    msgid: str = ""
    plural: str | None = None
    context: str | None = None
    strings: dict[int, str] = field(default_factory=dict)
    fuzzy: bool = False


def read_po(path: Path) -> list[Entry]:
    """The entries of a .po file (the header, msgid "", left out)."""
    entries: list[Entry] = []
    entry, target = Entry(), None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if not line.strip():
            if target is not None and entry.msgid:
                entries.append(entry)
            entry, target = Entry(), None
        elif line.startswith("#,"):
            entry.fuzzy = "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            _append(entry, target, ast.literal_eval(line))
        else:
            keyword, _, text = line.partition(" ")
            target = keyword
            if keyword.startswith("msgstr"):
                index = int(keyword[7:-1]) if "[" in keyword else 0
                target = f"msgstr:{index}"
                entry.strings[index] = ""
            _append(entry, target, ast.literal_eval(text))
    return entries


def _append(entry: Entry, target: str | None, text: str) -> None:
    if target == "msgid":
        entry.msgid += text
    elif target == "msgid_plural":
        entry.plural = (entry.plural or "") + text
    elif target == "msgctxt":
        entry.context = (entry.context or "") + text
    elif target is not None and target.startswith("msgstr:"):
        index = int(target[7:])
        entry.strings[index] += text


def test_every_message_has_a_russian_translation() -> None:
    entries = read_po(PO)
    assert len(entries) > 100
    untranslated = [e.msgid for e in entries if e.fuzzy or not all(e.strings.values())]
    assert untranslated == [], f"{len(untranslated)} messages without Russian: {untranslated[:20]}"
    plural = [e.msgid for e in entries if e.plural is not None and len(e.strings) < 3]
    assert plural == [], f"plural messages without the Russian forms: {plural}"


def test_translations_keep_the_placeholders() -> None:
    wrong = []
    for entry in read_po(PO):
        wanted = set(PLACEHOLDER.findall(entry.msgid + (entry.plural or "")))
        for text in entry.strings.values():
            # A plural form may leave the count out ("one ticket" is "один тикет").
            if not set(PLACEHOLDER.findall(text)) <= wanted or (
                entry.plural is None and set(PLACEHOLDER.findall(text)) != wanted
            ):
                wrong.append((entry.msgid, text))
    assert wrong == []


def test_the_compiled_catalogue_is_the_current_one() -> None:
    """``manage.py compilemessages`` ran after the last change of the .po file."""
    with MO.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for entry in read_po(PO):
        key = entry.msgid if entry.context is None else f"{entry.context}\x04{entry.msgid}"
        if entry.plural is None:
            assert compiled.gettext(key) == entry.strings[0], entry.msgid
        else:
            for index, text in entry.strings.items():
                assert compiled._catalog[(key, index)] == text, entry.msgid  # type: ignore[attr-defined]


def test_the_operations_pages_are_named_in_russian() -> None:
    """The admin index lists the registered operations pages by title: each has Russian."""
    from django.utils import translation

    from telegram_bot.ops.admin_site import registered_views

    titled = [view for view in registered_views() if view.title]
    assert titled
    for view in titled:
        with translation.override("en"):
            english = str(view.title)
        with translation.override("ru"):
            assert str(view.title) != english, english


def test_every_app_of_the_admin_index_is_named_in_russian() -> None:
    """Third-party apps too: their models come translated, their app names did not ("Axes",
    django-q2's label)."""
    from django.apps import apps
    from django.utils import translation

    for label in ("axes", "django_q", "auth"):
        config = apps.get_app_config(label)
        with translation.override("en"):
            english = str(config.verbose_name)
        with translation.override("ru"):
            assert str(config.verbose_name) != english, label


# -- the names the admin site shows: models, fields, choices, columns, fieldsets, filters --------
PROJECT_APPS = (
    "telegram_bot",
    "support",
    "community",
    "content",
    "moderation",
    "stats",
    "broadcasts",
)
# Texts that read the same in Russian: Django's own name of an automatic primary key.
SAME_IN_RUSSIAN = {"ID"}


def _untranslated(texts: list[tuple[str, object]]) -> list[str]:
    """``where: text`` for each text that a Russian operator would read in English."""
    from django.utils import translation

    found = []
    for where, text in texts:
        with translation.override("en"):
            english = str(text)
        with translation.override("ru"):
            russian = str(text)
        if english and russian == english and english not in SAME_IN_RUSSIAN:
            found.append(f"{where}: {english}")
    return found


def _model_texts() -> list[tuple[str, object]]:
    from django.apps import apps

    texts: list[tuple[str, object]] = []
    for label in PROJECT_APPS:
        config = apps.get_app_config(label)
        texts.append((f"app {label}", config.verbose_name))
        for model in config.get_models():
            opts = model._meta
            texts += [(opts.label, opts.verbose_name), (opts.label, opts.verbose_name_plural)]
            for model_field in opts.concrete_fields:
                if model_field.auto_created:
                    continue
                where = f"{opts.label}.{model_field.name}"
                texts += [
                    (where, model_field.verbose_name),
                    (f"{where} help", model_field.help_text),
                ]
                texts += [(f"{where}={value}", name) for value, name in model_field.flatchoices]
    return texts


def _admin_texts() -> list[tuple[str, object]]:
    from django.contrib import admin
    from django.contrib.admin.utils import label_for_field

    texts: list[tuple[str, object]] = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in PROJECT_APPS:
            continue
        where = type(model_admin).__name__
        for name in model_admin.list_display:
            if name != "__str__":
                texts.append((f"{where} column {name}", label_for_field(name, model, model_admin)))
        for title, options in model_admin.fieldsets or ():
            texts.append((f"{where} fieldset", title or ""))
            texts.append((f"{where} fieldset description", options.get("description", "")))
        for item in model_admin.list_filter:
            if isinstance(item, type) and issubclass(item, admin.SimpleListFilter):
                texts.append((f"{where} filter", item.title))
        texts.append((f"{where} search help", model_admin.search_help_text or ""))
    return texts


def test_the_models_of_the_project_are_named_in_russian() -> None:
    """Every app, model, field, help text and choice of the project's apps (what the admin
    index, lists, filters and forms show) has its Russian name."""
    texts = _model_texts()
    assert len(texts) > 300
    untranslated = _untranslated(texts)
    assert untranslated == [], "\n".join(untranslated)


def test_the_admin_columns_fieldsets_and_filters_are_named_in_russian() -> None:
    texts = _admin_texts()
    assert len(texts) > 50
    untranslated = _untranslated(texts)
    assert untranslated == [], "\n".join(untranslated)


def test_the_check_sees_a_field_without_a_translated_name() -> None:
    from django.db import models

    unnamed = models.BigIntegerField()
    unnamed.set_attributes_from_name("chat_id")  # what Django names a field without verbose_name
    assert _untranslated([("probe", unnamed.verbose_name), ("ok", "ID")]) == ["probe: chat id"]
