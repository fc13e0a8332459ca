"""Admin pages for personal data: export everything held about a Telegram user as one JSON
file, and erase it (docs/privacy.md). Each page has its own permission, checked by the admin
site (``register_view``) before the view runs."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from telegram_bot import features
from telegram_bot.audit import Actor
from telegram_bot.models import BotAdmin
from telegram_bot.numbers import ascii_int
from telegram_bot.ops.names import person_label
from telegram_bot.privacy import ErasureDeferred, check_user_id, erase_user
from telegram_bot.privacy.files import export_json

EXPORT_PERMISSION = "telegram_bot.export_personal_data"
ERASE_PERMISSION = "telegram_bot.erase_personal_data"
# Erasing a run-time bot admin deletes their row: the same as deleting it in the admin site.
DELETE_ADMIN_PERMISSION = "telegram_bot.delete_botadmin"


class UserIdField(forms.CharField):
    def clean(self, value: object) -> int:
        text = super().clean(value)
        try:
            return check_user_id(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class ExportForm(forms.Form):
    user_id = UserIdField(label=gettext_lazy("Telegram user id"), max_length=20)


class EraseForm(forms.Form):
    user_id = UserIdField(label=gettext_lazy("Telegram user id"), max_length=20)
    confirm = UserIdField(
        label=gettext_lazy("The same id again, to confirm"),
        max_length=20,
        help_text=gettext_lazy("Erasure cannot be undone."),
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if "user_id" in data and "confirm" in data and data["user_id"] != data["confirm"]:
            raise forms.ValidationError(_("The two ids differ: nothing was erased."))
        return data


@require_http_methods(["GET", "POST"])
def privacy_export(request: HttpRequest) -> HttpResponse:
    form = ExportForm(request.POST or None, initial=_asked(request))
    if request.method == "POST" and form.is_valid():
        user_id = form.cleaned_data["user_id"]
        document = export_json(user_id, actor=_site_actor(request), source="admin")
        response = HttpResponse(document, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="user-{user_id}.json"'
        return response
    return _page(request, form, _("Export personal data"), "export")


@require_http_methods(["GET", "POST"])
def privacy_erase(request: HttpRequest) -> HttpResponse:
    form = EraseForm(request.POST or None, initial=_asked(request))
    if request.method == "POST" and form.is_valid():
        user_id = form.cleaned_data["user_id"]
        if BotAdmin.objects.filter(telegram_id=user_id).exists() and not request.user.has_perm(
            DELETE_ADMIN_PERMISSION
        ):
            form.add_error(
                None,
                _(
                    "This user is a bot admin: erasing them removes them as an admin, which "
                    "needs the permission to delete bot admins. Nothing was erased."
                ),
            )
            return _page(request, form, _("Erase personal data"), "erase")
        who = _person(user_id)  # read before the erasure removes the name
        try:
            result = erase_user(user_id, actor=_site_actor(request), source="admin")
        except ErasureDeferred as exc:
            form.add_error(
                None,
                _("Not erased yet: %(reasons)s. Try again in a few minutes.")
                % {"reasons": "; ".join(exc.reasons)},
            )
            return _page(request, form, _("Erase personal data"), "erase")
        summary = result.summary or _("nothing was held")
        messages.success(
            request,
            _("Erased %(who)s: %(summary)s.") % {"who": who, "summary": summary}
            if who
            else _("Erased: %(summary)s.") % {"summary": summary},
        )
        return HttpResponseRedirect(reverse("admin:privacy-erase"))
    return _page(request, form, _("Erase personal data"), "erase")


def _asked(request: HttpRequest) -> dict[str, str]:
    """``?user_id=`` fills the form in (the member page links here with it)."""
    user_id = ascii_int(request.GET.get("user_id", ""))
    return {"user_id": str(user_id)} if user_id is not None else {}


def _person(user_id: int | None) -> str:
    """``Anna @anna``: who the id is, as the apps know them (blank when none does)."""
    if user_id is None:
        return ""
    name, username = features.people_names([user_id]).get(user_id, ("", ""))
    return person_label(name, username)


def _page(request: HttpRequest, form: forms.Form, title: str, action: str) -> HttpResponse:
    shown = form.data.get("user_id") if form.is_bound else form.initial.get("user_id")
    user_id = ascii_int(str(shown or ""))
    context = {
        **admin.site.each_context(request),
        "title": title,
        "form": form,
        "user_id": user_id,
        "person": _person(user_id),
        "action": action,
    }
    return render(request, "admin/privacy.html", context, status=400 if form.errors else 200)


def _site_actor(request: HttpRequest) -> Actor:
    return Actor(None, f"site:{request.user.get_username()}")
