"""django-unfold's interface strings, for the Russian catalogue.

django-unfold 0.91 ships no Russian translation, and ``makemessages`` reads only this project's
sources: these ``gettext_noop`` calls put the strings of unfold's templates and forms that the
console shows (and Django's own catalogue does not translate) into ``locale/ru``, where Django
finds them first. The msgids are unfold's, character for character; nothing imports this
module."""

from __future__ import annotations

from django.utils.translation import gettext_noop

UNFOLD_STRINGS = (
    # The sidebar, its search and the header.
    gettext_noop("Search apps and models..."),
    gettext_noop("All applications"),
    gettext_noop("Recent searches"),
    gettext_noop("No recent searches"),
    gettext_noop("No results matching your query"),
    gettext_noop("Loading more results..."),
    gettext_noop("Go back"),
    gettext_noop("Light"),
    gettext_noop("Dark"),
    # Lists: filters, actions, rows.
    gettext_noop("Apply Filters"),
    gettext_noop("Reset filters"),
    gettext_noop("No results found"),
    gettext_noop("This page yielded into no results. Create a new item or reset your filters."),
    gettext_noop("Type to search"),
    gettext_noop("Run"),
    gettext_noop("Select action"),
    gettext_noop("Select action to run"),
    gettext_noop("Select all rows"),
    gettext_noop("Select record"),
    gettext_noop("Expand row"),
    gettext_noop("More actions"),
    gettext_noop("No data"),
    gettext_noop("True"),
    gettext_noop("False"),
    # Forms and their fields.
    gettext_noop("General"),
    gettext_noop("Select value"),
    gettext_noop("Date"),
    gettext_noop("Choose file to upload"),
    gettext_noop("Click to download"),
    gettext_noop("Image preview"),
    gettext_noop("Record picture"),
    gettext_noop("This item will be deleted."),
    gettext_noop("Click to cancel"),
    gettext_noop("Toggle password visibility"),
    gettext_noop("After you've created a user, you’ll be able to edit more user options."),  # noqa: RUF001 (unfold's msgid)
    gettext_noop(
        "Raw passwords are not stored, so there is no way to see this "
        "user’s password, but you can change the password using "  # noqa: RUF001
        '<a href="{}" class="text-primary-600 dark:text-primary-500">this form</a>.'
    ),
    # Logging in and out.
    gettext_noop("Welcome back to"),
    gettext_noop("Forgotten your password or username?"),
    gettext_noop("Return to site"),
    gettext_noop("You have been successfully logged out from the administration"),
)
