"""Who may open what: every URL pattern of the project and every admin action, enumerated at
run time, for an anonymous visitor, a staff user without permissions, a staff user with only
the view permission of what the page shows, and a superuser.

A URL or an action added without a row here fails ``test_every_view_and_action_checks_its_
permission`` ("no permission rule"): decide who may use it, check it in the code, add the row.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from content.models import Post
from content.services import PostContent, post_create
from support import services as support_services
from support.models import Ticket, TicketMessage
from support.services import Author, Origin
from support.validation import Content
from telegram_bot.jobs.models import Job, JobStatus
from tests.builders import next_update_id
from tests.fakes.telegram import FakeTelegramServer

pytestmark = pytest.mark.django_db

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
    b"\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)
STATS = ("stats.view_dailyuserstat",)
TICKETS = ("support.view_ticket",)
DEAD_LETTERS = ("telegram_bot.manage_dead_letters",)
STATS_QUERY = "?chat_id=-1001234567890&start=2026-01-01&end=2026-01-02"
GROWTH = ("community.view_membermovement",)
VOICE_FILE = "voice-of-the-ticket"  # the fake Bot API holds it: its entry plays
EXPORT_DATA = ("telegram_bot.export_personal_data",)
ERASE_DATA = ("telegram_bot.erase_personal_data",)


@dataclass(frozen=True)
class Rule:
    """``access``: ``public`` (anyone), ``staff`` (any staff user), ``perm`` (a permission).
    For ``perm``: ``view`` is what the view-only user holds and ``viewer_allowed`` whether
    that is enough. ``check_allowed`` is off where even a superuser gets a 4xx for the
    request we can build (the gate is still checked)."""

    access: str
    method: str = "GET"
    view: tuple[str, ...] = ()
    viewer_allowed: bool = True
    query: str = ""
    check_allowed: bool = True


def perm(view: tuple[str, ...], method: str = "GET", **kwargs: Any) -> Rule:
    return Rule("perm", method, view, **kwargs)


PUBLIC, STAFF = Rule("public"), Rule("staff")
MINI_APP = Rule("mini app")
MINI_APP_CHAT = -1001234567890
RULES: dict[str, Rule] = {
    "home": PUBLIC,  # a redirect to the admin site, which asks for a login
    "favicon": PUBLIC,  # an empty answer
    "healthz": PUBLIC,
    "readyz": PUBLIC,
    "metrics": PUBLIC,  # 404 unless METRICS_TOKEN is set, then a bearer token (test_observability)
    # Telegram's side: the webhook checks its secret header (test_webhook.py); its schema is
    # for staff, as /api/v1/'s; the API root of that NinjaAPI answers 404.
    "telegram:telegram_webhook": PUBLIC,
    "telegram:telegram_webhook_other_methods": PUBLIC,
    "telegram:openapi-json": STAFF,
    "telegram:api-root": PUBLIC,
    "admin:login": PUBLIC,
    "admin:logout": PUBLIC,
    "admin:index": STAFF,
    "admin:search": STAFF,  # unfold's sidebar search: the entries the user's app list holds
    "admin:password_change": STAFF,
    "admin:password_change_done": STAFF,
    "admin:jsi18n": STAFF,
    # 404 for a staff user with no permission in the app.
    "admin:app_list": Rule("staff", check_allowed=False),
    # Answers 403 unless given a field of a model the user may view (Django checks it).
    "admin:autocomplete": Rule("staff", check_allowed=False),
    "admin:view_on_site": Rule("staff", check_allowed=False),
    "admin:<catch-all>": Rule("staff", check_allowed=False),
    "admin:dead-letters": perm(DEAD_LETTERS),
    "admin:dead-letter-replay": perm(DEAD_LETTERS, "POST"),
    "admin:dead-letter-drop": perm(DEAD_LETTERS, "POST"),
    "admin:stats-dashboard": perm(STATS),
    "admin:stats-today-by-chat": perm(STATS),
    "admin:community-join-requests": perm(("community.view_chatpolicy",)),
    "admin:community-join-request-decide": perm(("community.change_chatpolicy",), "POST"),
    "admin:privacy-export": perm(EXPORT_DATA),
    "admin:privacy-erase": perm(ERASE_DATA),
    "admin:stats-export": perm(STATS, query=STATS_QUERY),
    # The member page: each app's section only for who may view its model
    # (tests/stats/test_member_page.py); its actions need moderation's change permission.
    "admin:stats-member": perm(STATS),
    # A chat's moderation settings in effect, and the chats' list (moderation.settings_page).
    "admin:moderation-settings-by-chat": perm(("moderation.view_chatsettings",)),
    "admin:moderation-chat-settings": perm(("moderation.view_chatsettings",)),
    "admin:moderation-member-action": perm(
        ("moderation.view_warning",), "POST", viewer_allowed=False
    ),
    "admin:stats-export-daily": perm(STATS, query=STATS_QUERY),
    "admin:content-post-photo": perm(("content.view_post",)),
    # The post form's preview: for who may write posts (content.preview).
    "admin:content-post-preview": perm(("content.view_post",), "POST", viewer_allowed=False),
    "admin:support_ticket_reply": perm(TICKETS, "POST", viewer_allowed=False),
    "admin:support_ticket_resolve": perm(TICKETS, "POST", viewer_allowed=False),
    "admin:support_ticket_reopen": perm(TICKETS, "POST", viewer_allowed=False),
    "admin:support_ticket_retry": perm(TICKETS, "POST", viewer_allowed=False),
    # Viewing the ticket is enough to play its voice messages (test_entry_files.py).
    "admin:support_ticket_entry_file": perm(TICKETS),
    "admin:auth_user_password_change": perm(("auth.view_user",), viewer_allowed=False),
    "api-v1:api-root": Rule("staff", check_allowed=False),
    "api-v1:openapi-json": STAFF,
    "api-v1:openapi-view": STAFF,
    "api-v1:stats-chats": perm(STATS),
    "api-v1:stats-report": perm(STATS, query=STATS_QUERY),
    "api-v1:daily": perm(STATS, query=STATS_QUERY),
    "api-v1:members": perm(STATS, query=STATS_QUERY),
    "api-v1:hours": perm(STATS, query=STATS_QUERY),
    "api-v1:coverage": perm(STATS, query=STATS_QUERY),
    # Growth figures need their own permission wherever they are shown (test_growth_permission).
    "api-v1:stats-growth": perm(STATS + GROWTH, query=STATS_QUERY),
    "api-v1:community-growth": perm(GROWTH, query=STATS_QUERY),
    "api-v1:community-retention": perm(
        GROWTH, query="?chat_id=-1001234567890&week_start=2026-01-05"
    ),
    "api-v1:community-cohorts": perm(GROWTH, query="?chat_id=-1001234567890&weeks=4"),
    # The Mini App (webapp/): its login page and login endpoints are open (Telegram's signature
    # is the check: tests/webapp/test_login.py); a chat's pages open only to a Mini App session
    # of that chat's Telegram admin (tests/webapp/test_access.py), never to a staff account.
    "webapp:home": PUBLIC,
    "webapp:login": PUBLIC,
    "webapp:login-widget": PUBLIC,
    "webapp:logout": PUBLIC,
    **{
        f"webapp:{name}": MINI_APP
        for name in (
            "overview",
            "welcome",
            "captcha",
            "cleaning",
            "moderation",
            "rules",
            "notes",
            "audit",
            "member",
        )
    },
}
# The pages Django's admin makes for each registered model: what the view permission opens.
MODEL_PAGES = {"changelist": True, "history": True, "change": True, "add": False, "delete": False}


@dataclass(frozen=True)
class Endpoint:
    name: str
    route: str
    kwargs: tuple[str, ...]


def endpoints() -> Iterator[Endpoint]:
    def walk(patterns: list[Any], namespace: str, route: str) -> Iterator[Endpoint]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from walk(pattern.url_patterns, inner, route + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                name = pattern.name or _unnamed(str(pattern.pattern))
                kwargs = tuple(pattern.pattern.regex.groupindex)
                yield Endpoint(namespace + name, route + str(pattern.pattern), kwargs)

    yield from walk(get_resolver().url_patterns, "", "/")


def _unnamed(route: str) -> str:
    # Django's admin has two unnamed patterns: <object_id>/ (a redirect to change/) and the
    # final catch-all.
    return "<object-redirect>" if route.endswith("<path:object_id>/") else "<catch-all>"


def _func_and_name(entry: Any) -> tuple[Any, str]:
    """An admin action entry: an ``Action`` dataclass on Django 6.1 (unpacking it is
    deprecated there), a ``(func, name, description)`` tuple on 5.2."""
    if dataclasses.is_dataclass(entry):
        return entry.func, entry.name
    func, name, _description = entry
    return func, name


def actions() -> Iterator[tuple[str, Any]]:
    for model, model_admin in admin.site._registry.items():
        for entry in model_admin._get_base_actions():
            yield f"{model._meta.label_lower}:{_func_and_name(entry)[1]}", model_admin


CASES = [f"url {e.name}" for e in endpoints()] + [f"action {a}" for a, _ in actions()]


# --- the test ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_every_view_and_action_checks_its_permission(
    case: str, bot: FakeTelegramServer, settings: Any, tmp_path: Any
) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    bot.add_file(VOICE_FILE, b"OggS voice")
    objects = make_objects()
    kind, _, name = case.partition(" ")
    if kind == "action":
        check_action(name)
        return
    endpoint = next(e for e in endpoints() if e.name == name)
    rule, model = rule_for(endpoint)
    if rule.access == "public":
        return
    if rule.access == "mini app":
        check_mini_app_page(endpoint)
        return
    url = build_url(endpoint, objects, model) + rule.query
    assert denied(request_as(None, rule, url)), f"anonymous reached {url}"
    staff = user("staff")
    if rule.access == "staff":
        if rule.check_allowed:
            assert not denied(request_as(staff, rule, url)), f"staff refused at {url}"
        return
    assert denied(request_as(staff, rule, url)), f"staff without permission reached {url}"
    viewer = user("viewer", rule.view)
    outcome = request_as(viewer, rule, url)
    assert denied(outcome) != rule.viewer_allowed, f"view-only user at {url}: {outcome}"
    if rule.check_allowed and superuser_may(endpoint, model, objects):
        assert not denied(request_as(superuser(), rule, url)), f"superuser refused at {url}"


def check_mini_app_page(endpoint: Endpoint) -> None:
    """A page of a chat the bot is in: no staff account, a superuser neither, opens it, by
    GET or POST (the Mini App's own session is the only way in)."""
    from community.models import BotChat

    BotChat.objects.get_or_create(
        chat_id=MINI_APP_CHAT,
        defaults={"title": "Group", "chat_type": "supergroup", "is_member": True},
    )
    url = endpoint.route.replace("<str:chat_id>", str(MINI_APP_CHAT))
    url = url.replace("<str:user_id>", "5005")
    for account in (None, user("staff"), superuser()):
        for method in ("GET", "POST"):
            response = request_as(account, Rule("mini app", method), url)
            assert response.status_code in (404, 405), f"{account} reached {method} {url}"


def check_action(name: str) -> None:
    """An action needs a permission beyond viewing, is neither offered to nor run for a user
    who can only view, and runs for a superuser who has that permission."""
    label, _, action = name.partition(":")
    model_admin = next(a for m, a in admin.site._registry.items() if m._meta.label_lower == label)
    base = dict(_func_and_name(entry)[::-1] for entry in model_admin._get_base_actions())
    required = set(getattr(base[action], "allowed_permissions", ()))
    assert required - {"view"}, f"{name} needs only {sorted(required) or 'staff'}"
    opts = model_admin.opts
    viewer = user("viewer", (f"{opts.app_label}.view_{opts.model_name}",))
    assert action not in model_admin.get_actions(_request(viewer))
    pk = str(any_instance(model_admin.model).pk)
    assert post_action(model_admin, action, viewer, pk) == [], f"{name} ran for a viewer"
    if action in model_admin.get_actions(_request(superuser())):
        assert post_action(model_admin, action, superuser(), pk) == [pk]


def post_action(model_admin: Any, action: str, account: User, pk: str) -> list[str]:
    """POST the action for row ``pk`` to the changelist as ``account``: the primary keys it
    was run on (the action itself is replaced by a recorder, so nothing else happens)."""
    ran: list[str] = []
    original = model_admin._get_base_actions

    def recorded(*args: Any, **kwargs: Any) -> list[Any]:
        # Django 6.1 passes action_location and gives Action dataclasses; 5.2 gives tuples.
        entries: list[Any] = []
        for entry in original(*args, **kwargs):
            if dataclasses.is_dataclass(entry):
                if entry.name == action:
                    entry = dataclasses.replace(entry, func=_recorder(entry.func, ran))
                entries.append(entry)
                continue
            func, name, description = entry
            if name == action:
                func = _recorder(func, ran)
            entries.append((func, name, description))
        return entries

    client = Client()
    client.force_login(account)
    opts = model_admin.opts
    with mock.patch.object(model_admin, "_get_base_actions", recorded):
        client.post(
            f"/admin/{opts.app_label}/{opts.model_name}/",
            {"action": action, "_selected_action": [pk], "index": "0"},
        )
    return ran


def _recorder(func: Any, ran: list[str]) -> Any:
    def record(model_admin: Any, request: Any, queryset: Any) -> None:
        ran.extend(str(pk) for pk in queryset.values_list("pk", flat=True))

    record.allowed_permissions = getattr(func, "allowed_permissions", ())  # type: ignore[attr-defined]
    return record


# --- helpers ----------------------------------------------------------------------------------
def rule_for(endpoint: Endpoint) -> tuple[Rule, Any]:
    if endpoint.name in RULES:
        return RULES[endpoint.name], _model_of(endpoint)
    for model, _model_admin in admin.site._registry.items():
        opts = model._meta
        for suffix, viewer_allowed in MODEL_PAGES.items():
            if endpoint.name == f"admin:{opts.app_label}_{opts.model_name}_{suffix}":
                view = (f"{opts.app_label}.view_{opts.model_name}",)
                return perm(view, viewer_allowed=viewer_allowed), model
        prefix = f"/admin/{opts.app_label}/{opts.model_name}/"
        if endpoint.name == "admin:<object-redirect>" and endpoint.route.startswith(prefix):
            return Rule("staff", check_allowed=False), model
    raise AssertionError(f"no permission rule for {endpoint.name} ({endpoint.route})")


def _model_of(endpoint: Endpoint) -> Any:
    """The registered model whose admin pages the route is under, if any (its object ids)."""
    for model in admin.site._registry:
        if endpoint.route.startswith(f"/admin/{model._meta.app_label}/{model._meta.model_name}/"):
            return model
    return None


def superuser_may(endpoint: Endpoint, model: Any, objects: dict[str, str]) -> bool:
    """Pages of a model that its admin closes to everyone (no adding of jobs, say)."""
    if model is None:
        return True
    model_admin = admin.site._registry[model]
    request = _request(superuser())
    if endpoint.name.endswith("_add"):
        return bool(model_admin.has_add_permission(request))
    if endpoint.name.endswith("_delete"):
        obj = model.objects.get(pk=objects[f"object_id:{model._meta.label_lower}"])
        return bool(model_admin.has_delete_permission(request, obj))
    return True


def build_url(endpoint: Endpoint, objects: dict[str, str], model: Any) -> str:
    if endpoint.name == "admin:app_list":
        return "/admin/support/"
    if endpoint.name == "admin:<catch-all>":
        return "/admin/no-such-page/"

    def value(match: re.Match[str]) -> str:
        kwarg = match.group(1)
        if kwarg == "object_id" and model is not None:
            return objects.get(f"object_id:{model._meta.label_lower}", "1")
        return objects.get(kwarg, "1")

    return re.sub(r"<(?:\w+:)?(\w+)>", value, endpoint.route)


def make_objects() -> dict[str, str]:
    entry, _ = support_services.ticket_open(
        bot_id=123456789,
        user_id=2001,
        chat_id=2001,
        author=Author(name="Alice", telegram_id=2001),
        origin=Origin(update_id=next_update_id(), chat_id=2001, message_id=1),
        content=Content(kind="voice", text="help", file_id=VOICE_FILE),
    )
    ticket = Ticket.objects.get(pk=entry.ticket_id)
    entry_id = TicketMessage.objects.filter(ticket=ticket).values_list("pk", flat=True).first()
    post = post_create(
        content=PostContent(
            channel="@news_channel",
            text="",
            buttons=[],
            photo=SimpleUploadedFile("p.png", PNG, content_type="image/png"),
        ),
        created_by="test",
    )
    Job.objects.create(kind="test.nothing", status=JobStatus.FAILED)
    existing = {
        f"object_id:{model._meta.label_lower}": str(any_instance(model).pk)
        for model in admin.site._registry
    }
    return {
        **existing,
        "post_id": str(post.pk),
        "entry_id": str(entry_id),
        "update_id": "1",
        "content_type_id": str(ContentType.objects.get_for_model(Post).pk),
        "id": str(superuser().pk),
    }


def any_instance(model: Any) -> Any:
    """A row of ``model``: the first one, or one made with plain values in its required
    fields (so that pages of an object are checked with an object that exists)."""
    found = model.objects.first()
    if found is not None:
        return found
    # django-q2's failures are the tasks that did not succeed.
    values: dict[str, Any] = (
        {"success": False} if model._meta.label_lower == "django_q.failure" else {}
    )
    for field in model._meta.concrete_fields:
        if isinstance(field, models.AutoField):
            continue
        if not (field.primary_key or not (field.null or field.blank or field.has_default())):
            continue
        if isinstance(field, models.ForeignKey):
            values[field.name] = any_instance(field.related_model)
        elif field.choices:
            values[field.name] = field.choices[0][0]
        elif isinstance(field, models.DateTimeField):
            values[field.name] = timezone.now()
        elif isinstance(field, models.DateField):
            values[field.name] = timezone.now().date()
        elif isinstance(field, (models.IntegerField, models.FloatField)):
            values[field.name] = 1
        elif isinstance(field, (models.CharField, models.TextField)):
            values[field.name] = uuid.uuid4().hex[: min(field.max_length or 32, 32)]
        else:
            values[field.name] = {}
    return model.objects.create(**values)


def user(name: str, permissions: tuple[str, ...] = ()) -> User:
    account, _ = User.objects.get_or_create(username=name, defaults={"is_staff": True})
    account.user_permissions.set(
        [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (p.split(".", 1) for p in permissions)
        ]
    )
    return User.objects.get(pk=account.pk)  # a fresh permission cache


def superuser() -> User:
    account, _ = User.objects.get_or_create(
        username="root", defaults={"is_staff": True, "is_superuser": True}
    )
    return account


def request_as(account: User | None, rule: Rule, url: str) -> Any:
    client = Client()
    if account is not None:
        client.force_login(account)
    if rule.method == "POST":
        return client.post(url, {"text": ""})
    return client.get(url)


def denied(response: Any) -> bool:
    """401 or 403, a 404 that hides a page (the tickets answer so), or the login page."""
    if response.status_code in (401, 403, 404):
        return True
    return response.status_code == 302 and "/admin/login/" in response.get("Location", "")


def _request(account: User) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = account
    return request


# --- what the rows above mean in practice ---------------------------------------------------
def test_a_job_viewer_cannot_run_a_failed_job_again_and_an_operator_can() -> None:
    job = Job.objects.create(kind="test.nothing", status=JobStatus.FAILED)
    form = {"action": "retry_now", "_selected_action": [str(job.pk)], "index": "0"}
    viewer = Client()
    viewer.force_login(user("viewer", ("telegram_bot.view_job",)))
    viewer.post("/admin/telegram_bot/job/", form)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    operator = Client()
    operator.force_login(user("operator", ("telegram_bot.view_job", "telegram_bot.operate_job")))
    operator.post("/admin/telegram_bot/job/", form)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_the_index_lists_only_the_operation_pages_the_user_may_open() -> None:
    client = Client()
    client.force_login(user("staff"))
    page = client.get("/admin/").content.decode()
    assert "/admin/stats/" not in page and "/admin/dead-letters/" not in page
    client.force_login(user("reader", STATS))
    page = client.get("/admin/").content.decode()
    assert "/admin/stats/" in page and "/admin/dead-letters/" not in page


def test_the_api_tells_a_staff_user_without_the_permission_403_and_a_stranger_401() -> None:
    assert Client().get("/api/v1/stats/chats").status_code == 401
    client = Client()
    client.force_login(user("staff"))
    response = client.get("/api/v1/stats/chats")
    assert response.status_code == 403
    assert "permission" in response.json()["detail"]
