"""The Mini App's pages (``/app/``): login, my chats, a chat's overview, settings, audit log,
members. Every page of a chat asks ``webapp.access`` first (404 for who is not its admin);
every change asks Telegram again (``access_for_change``) and needs the right Telegram gives
for it; every change goes through the services the bot's commands and the admin site use,
and is audited with the Telegram user as actor (source ``miniapp``)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseForbidden,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.utils import timezone, translation
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from community.growth import growth_days
from community.models import MemberPolicy
from community.services.members import render as render_member_text
from moderation.models import ChatSettings, Warning, WarnState
from moderation.rules import blocklist
from moderation.rules import services as rules
from moderation.rules.models import BlocklistEntry, Filter, Lock, Note
from moderation.rules.replies import content_of
from moderation.services import Origin, Target, penalize_queued, warn_and_queue
from stats.selectors import member_names, stats_report
from telegram_bot.audit import Actor, audit_step
from telegram_bot.audit.admin import phrases, sentence
from telegram_bot.bot import bot_username
from telegram_bot.models import AuditEntry, chat_zone
from telegram_bot.numbers import ascii_int
from telegram_bot.state import get_store
from telegram_bot.updates import User
from webapp import access
from webapp.access import DELETE, INFO, RESTRICT, ChatAccess
from webapp.auth import AuthError, init_data_check, login_widget_check
from webapp.forms import (
    BlocklistForm,
    CaptchaForm,
    CleaningForm,
    FilterForm,
    LockForm,
    MemberActionForm,
    ModerationForm,
    NoteForm,
    WelcomeForm,
)
from webapp.sessions import (
    AppSession,
    over_limit,
    session_close,
    session_of,
    session_open,
    set_cookie,
)

SOURCE = "miniapp"
CHANGES_PER_MINUTE = 30
ONCE_TTL_MS = 24 * 3600 * 1000
AUDIT_SHOWN = 100
View = Callable[..., HttpResponse]


# -- login ------------------------------------------------------------------------------------


@require_POST
def login_init_data(request: HttpRequest) -> HttpResponse:
    """POST ``init_data`` (the Mini App's ``Telegram.WebApp.initData``): a session cookie and
    where to go (the chat of a ``startapp`` link, else the list of chats)."""
    return _login(request, lambda: _init_data(request))


@require_POST
def login_widget(request: HttpRequest) -> HttpResponse:
    """POST the Login Widget's fields: a session cookie."""
    return _login(request, lambda: _widget(request))


def _init_data(request: HttpRequest) -> Any:
    return init_data_check(
        request.POST.get("init_data", ""),
        bot_token=settings.TELEGRAM_BOT_TOKEN,
        max_age=settings.MINIAPP_AUTH_MAX_AGE_SECONDS,
    )


def _widget(request: HttpRequest) -> Any:
    fields = {
        key: request.POST.get(key, "") for key in request.POST if key != "csrfmiddlewaretoken"
    }
    return login_widget_check(
        fields, bot_token=settings.TELEGRAM_BOT_TOKEN, max_age=settings.MINIAPP_AUTH_MAX_AGE_SECONDS
    )


def _login(request: HttpRequest, check: Callable[[], Any]) -> HttpResponse:
    if over_limit(request, "login", settings.MINIAPP_LOGINS_PER_MINUTE):
        return JsonResponse({"error": _("Too many attempts: wait a minute.")}, status=429)
    if not settings.TELEGRAM_BOT_TOKEN:
        return JsonResponse({"error": _("The bot is not configured.")}, status=503)
    try:
        identity = check()
        token = session_open(identity)
    except AuthError:
        return JsonResponse(
            {"error": _("Telegram did not confirm this login: open the app again.")}, status=403
        )
    chat_id = ascii_int(identity.start_param, signed=True) if identity.start_param else None
    target = f"/app/c/{chat_id}/" if chat_id is not None and chat_id < 0 else "/app/"
    response = JsonResponse({"next": target})
    session_close(request, response)  # the session this browser had before (another user's?)
    set_cookie(request, response, token)
    return response


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    response = redirect("webapp:home")
    session_close(request, response)
    return response


# -- decorators -------------------------------------------------------------------------------


def signed_in(view: View) -> View:
    """The Mini App session (``request.app_session``) in the user's Telegram language; without
    one, 404 (the home page shows the login page instead)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        session = session_of(request)
        if session is None:
            if request.method == "GET" and getattr(view, "login_page", False):
                return render(request, "webapp/login.html", _login_context(request))
            raise Http404
        with translation.override(session.language or settings.LANGUAGE_CODE):
            request.app_session = session  # type: ignore[attr-defined]
            response = view(request, *args, **kwargs)
            if hasattr(response, "render"):
                response.render()
            return response

    return wrapper


def chat_page(view: View) -> View:
    """A page of one chat: ``access`` (404 unless the user may see the chat) and the chat's
    zone; a POST asks Telegram again and is rate limited."""

    @wraps(view)
    @signed_in
    def wrapper(request: HttpRequest, chat_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        session: AppSession = request.app_session  # type: ignore[attr-defined]
        chat = ascii_int(chat_id, signed=True)
        if chat is None or chat >= 0:
            raise Http404
        if request.method == "POST":
            if over_limit(request, "change", CHANGES_PER_MINUTE, who=str(session.user_id)):
                return HttpResponse(_("Too many changes: wait a minute."), status=429)
            chat_access = access.access_for_change(session.user_id, chat)
        else:
            chat_access = access.access_for_view(session.user_id, chat)
        with timezone.override(chat_zone(chat)):
            return view(request, chat_access, *args, **kwargs)

    return wrapper


def _actor(request: HttpRequest) -> Actor:
    session: AppSession = request.app_session  # type: ignore[attr-defined]
    return Actor(session.user_id, session.name)


def _page(
    request: HttpRequest, template: str, chat: ChatAccess | None, **context: Any
) -> HttpResponse:
    zone = timezone.get_current_timezone()
    context.update(
        chat=chat,
        zone_name=str(getattr(zone, "key", zone)),
        session=request.app_session,  # type: ignore[attr-defined]
        language=translation.get_language(),
    )
    return render(request, template, context)


def _refused(request: HttpRequest) -> HttpResponse:
    return HttpResponseForbidden(_("Your Telegram rights in this chat do not allow this change."))


# -- pages ------------------------------------------------------------------------------------


def _home(request: HttpRequest) -> HttpResponse:
    session: AppSession = request.app_session  # type: ignore[attr-defined]
    return _page(request, "webapp/chats.html", None, chats=access.my_chats(session.user_id))


_home.login_page = True  # type: ignore[attr-defined]
home = require_GET(signed_in(_home))


@require_GET
@chat_page
def overview(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    zone = timezone.get_current_timezone()
    today = timezone.localdate()
    week_start = today - timedelta(days=6)
    report = stats_report(
        chat_id=chat.chat_id, start=week_start, end=today, store=get_store(), zone=zone
    )
    today_view = report.days[-1] if report.days else None
    growth = growth_days(chat.chat_id, week_start, today, zone=zone)
    return _page(
        request,
        "webapp/overview.html",
        chat,
        today=today,
        today_messages=today_view.messages if today_view else 0,
        today_members=today_view.members if today_view else 0,
        week_messages=report.messages,
        days=report.days,
        member_count=next(
            (day.member_count for day in reversed(growth) if day.member_count is not None), None
        ),
        joins=sum(day.joins for day in growth),
        leaves=sum(day.leaves for day in growth),
        growth=growth,
        top=member_names(chat.chat_id, report.members(10), get_store()),
        heat=_heat(report.week_hours),
    )


WEEKDAYS = (0, 1, 2, 3, 4, 5, 6)


def _heat(week_hours: list[list[int]]) -> list[tuple[int, list[tuple[int, int]]]]:
    """Each weekday's 24 hours as (count, shade 0-4) for the heat map, Monday first."""
    top = max((count for row in week_hours for count in row), default=0)
    return [
        (day, [(count, 0 if not count else 1 + (3 * count) // top) for count in week_hours[day]])
        for day in WEEKDAYS
        if day < len(week_hours)
    ]


def _policy(chat: ChatAccess, *, lock: bool = False) -> MemberPolicy:
    rows = MemberPolicy.objects.select_for_update() if lock else MemberPolicy.objects
    return rows.filter(chat_id=chat.chat_id).first() or MemberPolicy(
        chat_id=chat.chat_id, title=chat.title[:128]
    )


@require_http_methods(["GET", "POST"])
@chat_page
def welcome(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Welcome, goodbye and rules (``can_change_info``), with a preview."""
    return _settings_form(request, chat, WelcomeForm, INFO, "welcome", preview=True)


@require_http_methods(["GET", "POST"])
@chat_page
def captcha(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Captcha and anti-raid (``can_restrict_members``)."""
    return _settings_form(request, chat, CaptchaForm, RESTRICT, "captcha")


@require_http_methods(["GET", "POST"])
@chat_page
def cleaning(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Deleting the join and leave service messages (``can_delete_messages``)."""
    return _settings_form(request, chat, CleaningForm, DELETE, "cleaning")


@require_http_methods(["GET", "POST"])
@chat_page
def moderation_settings(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Warnings, anti-flood, violations (``can_restrict_members``)."""
    return _settings_form(request, chat, ModerationForm, RESTRICT, "moderation")


def _settings_form(
    request: HttpRequest,
    chat: ChatAccess,
    form_class: Any,
    right: str,
    section: str,
    *,
    preview: bool = False,
) -> HttpResponse:
    model = form_class.Meta.model
    saved = False
    shown = ""
    if request.method == "POST":
        if not chat.may(right):
            return _refused(request)
        with transaction.atomic():
            rows = model.objects.select_for_update().filter(chat_id=chat.chat_id)
            instance = rows.first() or _new_row(model, chat)
            form = form_class(request.POST, instance=instance)
            if form.is_valid() and "preview" not in request.POST:
                changed = ", ".join(
                    f"{name}={_short(form.cleaned_data.get(name))}" for name in form.changed_data
                )
                with audit_step(
                    f"{model.__name__.lower()}.change",
                    actor=_actor(request),
                    source=SOURCE,
                    chat_id=chat.chat_id,
                    detail=changed or "no change",
                ):
                    form.save()
                saved = True
        if form.is_valid() and preview and "welcome_text" in form.cleaned_data:
            shown = _preview(request, chat, form.cleaned_data)
    else:
        form = form_class(
            instance=model.objects.filter(chat_id=chat.chat_id).first() or _new_row(model, chat)
        )
    return _page(
        request,
        "webapp/settings_form.html",
        chat,
        form=form,
        section=section,
        can_change=chat.may(right),
        saved=saved,
        preview=shown,
        with_preview=preview,
    )


def _new_row(model: Any, chat: ChatAccess) -> Any:
    if model is ChatSettings:
        return ChatSettings(chat_id=chat.chat_id, title=chat.title[:200])
    return MemberPolicy(chat_id=chat.chat_id, title=chat.title[:128])


def _preview(request: HttpRequest, chat: ChatAccess, data: dict[str, Any]) -> str:
    session: AppSession = request.app_session  # type: ignore[attr-defined]
    user = User(id=session.user_id, is_bot=False, first_name=session.name or str(session.user_id))
    # render() escapes the template and every value; its only markup is the mention's link.
    return mark_safe(  # noqa: S308
        render_member_text(
            data.get("welcome_text") or "",
            user,
            chat_title=chat.title,
            rules=data.get("rules_text") or "",
        )
    )


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


@require_http_methods(["GET", "POST"])
@chat_page
def chat_rules(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Locks and the blocklist (``can_delete_messages``, as /lock and /addblocklist), through
    the rules' services."""
    lock_form, block_form = LockForm(), BlocklistForm()
    message = ""
    if request.method == "POST":
        if not chat.may(DELETE):
            return _refused(request)
        change = rules.Change(chat.chat_id, _actor(request), source=SOURCE)
        what = request.POST.get("do", "")
        if what == "lock":
            lock_form = LockForm(request.POST)
            if lock_form.is_valid():
                data = lock_form.cleaned_data
                rules.lock_set(change, kinds=[data["kind"]], action=data["action"], seconds=None)
                return redirect("webapp:rules", chat_id=chat.chat_id)
        elif what == "unlock":
            kind = request.POST.get("kind", "")
            if Lock.objects.filter(chat_id=chat.chat_id, kind=kind).exists():
                rules.lock_remove(change, kinds=[kind])
            return redirect("webapp:rules", chat_id=chat.chat_id)
        elif what == "block":
            block_form = BlocklistForm(request.POST)
            if block_form.is_valid():
                data = block_form.cleaned_data
                try:
                    pattern = blocklist.normalise(data["pattern"])
                    rules.blocklist_add(
                        change, pattern=pattern, action=data["action"], seconds=None
                    )
                except (ValueError, rules.RulesError) as exc:
                    block_form.add_error("pattern", str(exc))
                else:
                    return redirect("webapp:rules", chat_id=chat.chat_id)
        elif what == "unblock":
            rules.blocklist_remove(change, pattern=request.POST.get("pattern", "")[:100])
            return redirect("webapp:rules", chat_id=chat.chat_id)
        else:
            message = _("Unknown action.")
    return _page(
        request,
        "webapp/rules.html",
        chat,
        locks=Lock.objects.filter(chat_id=chat.chat_id),
        entries=BlocklistEntry.objects.filter(chat_id=chat.chat_id).order_by("pattern"),
        lock_form=lock_form,
        block_form=block_form,
        can_change=chat.may(DELETE),
        message=message,
    )


@require_http_methods(["GET", "POST"])
@chat_page
def notes(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    """Notes and filters (``can_delete_messages``, as /save and /filter), through the rules'
    services; a text is read as the commands read it (its ``[label](url)`` buttons)."""
    note_form, filter_form = NoteForm(), FilterForm()
    if request.method == "POST":
        if not chat.may(DELETE):
            return _refused(request)
        change = rules.Change(chat.chat_id, _actor(request), source=SOURCE)
        what = request.POST.get("do", "")
        try:
            if what == "note":
                note_form = NoteForm(request.POST)
                if note_form.is_valid():
                    data = note_form.cleaned_data
                    rules.note_save(
                        change,
                        name=data["name"].lstrip("#").lower(),
                        content=content_of(data["text"], None),
                        admin_only=data["admin_only"],
                    )
                    return redirect("webapp:notes", chat_id=chat.chat_id)
            elif what == "filter":
                filter_form = FilterForm(request.POST)
                if filter_form.is_valid():
                    data = filter_form.cleaned_data
                    try:
                        keyword = blocklist.normalise(data["keyword"])
                    except ValueError as exc:
                        filter_form.add_error("keyword", str(exc))
                    else:
                        content = content_of(data["text"], None)
                        rules.filter_save(change, keyword=keyword, content=content)
                        return redirect("webapp:notes", chat_id=chat.chat_id)
            elif what == "clear":
                rules.note_clear(change, name=request.POST.get("name", "")[:64])
                return redirect("webapp:notes", chat_id=chat.chat_id)
            elif what == "stop":
                rules.filter_stop(change, keyword=request.POST.get("keyword", "")[:100])
                return redirect("webapp:notes", chat_id=chat.chat_id)
        except rules.RulesError as exc:
            (note_form if what == "note" else filter_form).add_error(None, str(exc))
    return _page(
        request,
        "webapp/notes.html",
        chat,
        notes=Note.objects.filter(chat_id=chat.chat_id).order_by("name"),
        filters=Filter.objects.filter(chat_id=chat.chat_id).order_by("keyword"),
        note_form=note_form,
        filter_form=filter_form,
        can_change=chat.may(DELETE),
    )


@require_GET
@chat_page
def audit_log(request: HttpRequest, chat: ChatAccess) -> HttpResponse:
    known = phrases()
    entries = [
        (entry, sentence(entry, known))
        for entry in AuditEntry.objects.filter(chat_id=chat.chat_id).order_by("-created_at")[
            :AUDIT_SHOWN
        ]
    ]
    return _page(request, "webapp/audit.html", chat, entries=entries)


@require_http_methods(["GET", "POST"])
@chat_page
def member(request: HttpRequest, chat: ChatAccess, user_id: str) -> HttpResponse:
    """One member of the chat: warnings, and warn / mute / ban / unban (``can_restrict_members``),
    each taken once per form (its one-time key) through moderation's services."""
    uid = ascii_int(user_id)
    if uid is None or uid < 1:
        raise Http404
    state = WarnState.objects.filter(chat_id=chat.chat_id, user_id=uid).first()
    target = Target(uid, state.name if state else "", state.username if state else "")
    message = ""
    form = MemberActionForm(initial={"once": secrets.token_urlsafe(16)})
    if request.method == "POST":
        if not chat.may(RESTRICT):
            return _refused(request)
        form = MemberActionForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            if get_store().set_if_absent(f"miniapp:once:{data['once']}", 1, ttl_ms=ONCE_TTL_MS):
                message = _act(request, chat, target, data["action"], data["reason"])
            else:
                message = _("Already done.")
            form = MemberActionForm(initial={"once": secrets.token_urlsafe(16)})
    return _page(
        request,
        "webapp/member.html",
        chat,
        target=target,
        warnings=Warning.objects.filter(chat_id=chat.chat_id, user_id=uid)[:50],
        form=form,
        can_change=chat.may(RESTRICT),
        message=message,
    )


MUTE_SECONDS = 3600


def _act(request: HttpRequest, chat: ChatAccess, target: Target, action: str, reason: str) -> str:
    origin = Origin(chat.chat_id, _actor(request), SOURCE)
    if action == "warn":
        result = warn_and_queue(origin=origin, target=target, reason=reason)
        return _("%(name)s is warned (%(count)s/%(limit)s).") % {
            "name": target.label,
            "count": result.count,
            "limit": result.limit,
        }
    seconds = MUTE_SECONDS if action == "mute" else None
    penalize_queued(origin=origin, action=action, target=target, seconds=seconds, reason=reason)
    return _("Sent to Telegram: the audit log shows the outcome in a moment.")


def _login_context(request: HttpRequest) -> dict[str, Any]:
    return {
        "bot_username": bot_username() or "",
        "bot_id": settings.TELEGRAM_BOT_TOKEN.partition(":")[0],
        "config": json.dumps({"login": "/app/login/", "widget": "/app/login/widget/"}),
    }
