"""Chats and people by name in the console: list columns that show a chat's title and a
person's name and @username with the id as secondary text, and a chooser of known chats by
title for a form's chat-id field.

A list names its rows once per page: the admin's ``changelist_view`` passes its response to
``name_page`` (one lookup of titles and one of names for the page, from every app that knows
them: ``features.chat_titles`` and ``features.people_names``); the columns ``chat_column`` and
``person_column`` read what it found and show the bare id where nothing is known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot import features
from telegram_bot.numbers import ascii_int

_ATTRIBUTE = "console_names"
CHAT = gettext_lazy("chat")
MEMBER = gettext_lazy("member")


class PageNames:
    """The titles and names of one list page's chats and people."""

    def __init__(self, titles: dict[int, str], people: dict[int, tuple[str, str]]) -> None:
        self.titles, self.people = titles, people


def name_page(
    response: Any, *, chats: Iterable[str] = ("chat_id",), people: Iterable[str] = ()
) -> Any:
    """Look up the titles of the chats in the fields ``chats`` and the names of the people in
    ``people`` of a changelist response's rows, and hang them on the rows for the columns.
    Returns the response (a redirect or an error page passes through)."""
    changelist = getattr(response, "context_data", {}).get("cl")
    if changelist is None:
        return response
    rows = list(changelist.result_list)
    chats, people = tuple(chats), tuple(people)
    titles = features.chat_titles(
        value for row in rows for field in chats if (value := getattr(row, field)) is not None
    )
    names = features.people_names(
        value for row in rows for field in people if (value := getattr(row, field)) is not None
    )
    found = PageNames(titles, names)
    for row in rows:
        setattr(row, _ATTRIBUTE, found)
    return response


def chat_cell(chat_id: int | None, title: str) -> str:
    """``Title`` over the id in small print; the id alone when no title is known."""
    if chat_id is None:
        return "—"
    if not title:
        return str(chat_id)
    return format_html('{}<br><span class="quiet console-id">{}</span>', title, chat_id)


def person_label(name: str, username: str) -> str:
    """``Anna @anna``, ``Anna``, ``@anna`` or blank."""
    return " ".join(part for part in (name, f"@{username}" if username else "") if part)


def person_cell(user_id: int | None, name: str = "", username: str = "") -> str:
    """``Anna @anna`` over the id in small print; the id alone when no name is known."""
    if user_id is None:
        return "—"
    label = person_label(name, username)
    if not label:
        return str(user_id)
    return format_html('{}<br><span class="quiet console-id">{}</span>', label, user_id)


def chat_column(field: str = "chat_id", description: Any = CHAT) -> Callable[[Any], str]:
    """A list column showing the chat in ``field`` by its title (``name_page`` first)."""

    @admin.display(description=description, ordering=field)
    def column(row: Any) -> str:
        chat_id = getattr(row, field)
        found = getattr(row, _ATTRIBUTE, None)
        title = found.titles.get(chat_id, "") if found is not None else ""
        return chat_cell(chat_id, title)

    column.__name__ = f"{field}_named"
    return column


def person_column(field: str = "user_id", description: Any = MEMBER) -> Callable[[Any], str]:
    """A list column showing the person in ``field`` by name and @username (``name_page``
    first)."""

    @admin.display(description=description, ordering=field)
    def column(row: Any) -> str:
        user_id = getattr(row, field)
        found = getattr(row, _ATTRIBUTE, None)
        name, username = found.people.get(user_id, ("", "")) if found is not None else ("", "")
        return person_cell(user_id, name, username)

    column.__name__ = f"{field}_named"
    return column


# -- choosing a chat -----------------------------------------------------------------------


def chat_choices() -> list[tuple[int, str]]:
    """The known chats as ``(id, label)``, by title: a title alone, the id beside it only
    when two chats share the title, the id alone when the chat has none."""
    chats = features.known_chats()
    counts: dict[str, int] = {}
    for title in chats.values():
        counts[title] = counts.get(title, 0) + 1
    labelled = []
    for chat_id, title in chats.items():
        if not title:
            label = _("chat %(id)s (no title known)") % {"id": chat_id}
        elif counts[title] > 1:
            label = f"{title} ({chat_id})"
        else:
            label = title
        labelled.append((chat_id, label))
    return sorted(labelled, key=lambda choice: (not chats[choice[0]], choice[1].casefold()))


class ChatSelect(forms.Select):
    """A select of chats that keeps the current value as an option when it is not among the
    known chats (a chat the bot left), so that showing a form never changes it."""

    def optgroups(self, name: str, value: list[Any], attrs: dict[str, Any] | None = None) -> Any:
        known = {str(choice) for choice, _label in self.choices}
        extra = [v for v in value if v not in ("", None) and str(v) not in known]
        if extra:
            self.choices = [
                *self.choices,
                *((v, _("chat %(id)s (not among the bot's chats)") % {"id": v}) for v in extra),
            ]
        return super().optgroups(name, value, attrs)


class ChatChoiceField(forms.TypedChoiceField):
    """A chat id chosen among the known chats by title. The value stays a chat id: one not
    (or no longer) known is accepted when it is a well-formed id (a group's is negative, a
    private chat's is its user's), since a settings row may name a chat before the bot sees
    it; the model's own validators still apply."""

    widget = ChatSelect

    def __init__(self, **kwargs: Any) -> None:
        required = kwargs.get("required", True)
        kwargs.setdefault("coerce", int)
        kwargs.setdefault("empty_value", None)
        kwargs["choices"] = _choices_with_blank if not required else chat_choices
        super().__init__(**kwargs)

    def valid_value(self, value: Any) -> bool:
        if super().valid_value(value):
            return True
        number = ascii_int(str(value), signed=True)
        return number is not None and number != 0


def _choices_with_blank() -> list[tuple[Any, str]]:
    return [("", "—"), *chat_choices()]


class ChatDatalistInput(forms.TextInput):
    """A text input that suggests the known chats by title (a ``datalist``: the browser shows
    the titles, the value is the id) and still takes what is typed (an @username)."""

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        list_id = f"{(attrs or {}).get('id') or name}-chats"
        field = super().render(name, value, {**(attrs or {}), "list": list_id}, renderer)
        options = format_html_join("", '<option value="{}">{}</option>', chat_choices())
        return format_html('{}<datalist id="{}">{}</datalist>', field, list_id, options)


def chat_formfield(db_field: Any, **kwargs: Any) -> ChatChoiceField:
    """The chooser for a model's chat-id field, with its label, help and blankness."""
    return ChatChoiceField(
        label=kwargs.get("label", capfirst(db_field.verbose_name)),
        help_text=kwargs.get("help_text", db_field.help_text),
        required=not db_field.blank,
    )
