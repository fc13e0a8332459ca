"""Posts in the admin site: list, forms (a photo uploaded here is sent with sendPhoto as an
upload), and the actions publish now, back to draft, archive, mark published. Every write goes
through ``content.services``; the publication jobs are listed with the other jobs."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest
from django.urls import reverse
from django.utils.functional import lazy
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from unfold.admin import ModelAdmin

from content import jobs, selectors, services, validation
from content.errors import PostError
from content.forms import AlbumField, ButtonsField, ChannelsField, PollOptionsField, PostAdminForm
from content.models import UNPUBLISHED, PollType, Post, PostStatus
from content.preview import post_preview, post_preview_view, render_preview
from content.services import PostChanges, PostContent, Removal
from telegram_bot.audit import Step, audit_step
from telegram_bot.audit.admin import admin_actor
from telegram_bot.errors import TelegramApiError
from telegram_bot.features import chat_titles
from telegram_bot.jobs.models import Job
from telegram_bot.numbers import ascii_int
from telegram_bot.ops.admin_site import register_view
from telegram_bot.ops.names import ChatDatalistInput, chat_cell
from telegram_bot.ops.zones import ZonedDateTimeField, zone_name, zoned

_FAILED_FLAG = "_content_admin_failed"


def _publication_help() -> str:
    return _(
        "Empty: a draft. A time ahead, in %(zone)s: published then. To publish at once, "
        "save, then use the action 'Publish now' in the list."
    ) % {"zone": zone_name()}


def _publish_at_label() -> str:
    return _("Publish at (%(zone)s)") % {"zone": zone_name()}


_PUBLICATION_HELP = lazy(_publication_help, str)()


def _removal_label(name: str) -> str:
    label = _("Unpin at (%(zone)s)") if name == "unpin_at" else _("Delete at (%(zone)s)")
    return label % {"zone": zone_name()}


_REMOVAL_LABELS = {name: lazy(_removal_label, str)(name) for name in ("unpin_at", "delete_at")}
_PUBLISH_AT_LABEL = lazy(_publish_at_label, str)()


def post_photo(request: HttpRequest, post_id: int) -> Any:
    """The uploaded photo of a post, for staff who may view or change posts (registered
    below).

    The bytes decide what it is, never the stored name (files stored before names were
    generated may end in anything): a JPEG, PNG or WebP is served inline with its image type,
    anything else as an ``application/octet-stream`` download. ``nosniff`` and a sandboxing
    CSP keep a browser from running whatever the file holds on the admin origin."""
    post = selectors.post_find(post_id)
    if post is None or not post.photo:
        raise Http404("no photo")
    try:
        kind = validation.photo_type(validation.read_head(post.photo, validation.PHOTO_HEAD_BYTES))
    except FileNotFoundError:
        raise Http404("the photo file is missing") from None
    if kind is None:
        content_type, disposition = "application/octet-stream", "attachment"
        filename = f"post-{post.pk}-photo.bin"
    else:
        content_type, disposition = kind, "inline"
        filename = f"post-{post.pk}-photo.{validation.PHOTO_EXTENSIONS[kind]}"
    response = FileResponse(post.photo.open("rb"), content_type=content_type)
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response


register_view(
    "content/posts/<int:post_id>/photo/",
    post_photo,
    name="content-post-photo",
    title="",
    permissions=("content.view_post", "content.change_post"),
)
register_view(
    "content/posts/preview/",
    post_preview_view,
    name="content-post-preview",
    title="",
    permissions=("content.add_post", "content.change_post"),
)


@admin.register(Post)
class PostAdmin(ModelAdmin):
    form = PostAdminForm
    list_display = (
        "id",
        "summary",
        "kind",
        "channel_named",
        "status_display",
        "publish_at",
        "channel_message_id",
        "published_at",
        "updated_at",
    )
    list_display_links = ("id", "summary")
    list_filter = ("status", "outcome_unknown", "channel")
    search_fields = ("text", "channel")
    ordering = ("-created_at", "-id")
    actions = ("publish_now", "unschedule", "archive", "archive_and_delete", "mark_published")
    readonly_fields = (
        "preview",
        "status_display",
        "photo_preview",
        "publication_job",
        "channel_message_id",
        "message_deleted",
        "published_at",
        "unpinned_at",
        "deleted_at",
        "recurrence_of",
        "copy_of",
        "channel_outcomes",
        "statistics",
        "last_error",
        "photo_file_id",
        "created_by",
        "created_at",
        "updated_at",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "channel",
                    "also_to",
                    "text",
                    "photo",
                    "photo_preview",
                    "album",
                    "album_files",
                    "buttons",
                    "preview",
                )
            },
        ),
        (
            gettext_lazy("Poll"),
            {"fields": ("poll_question", "poll_options", "poll_type", "poll_explanation")},
        ),
        (
            gettext_lazy("Publication"),
            {
                "fields": ("publish_at", "silent", "pin", "unpin_at", "delete_at"),
                "description": _PUBLICATION_HELP,
            },
        ),
        (gettext_lazy("Repeat"), {"fields": ("repeat", "repeat_until")}),
        (
            gettext_lazy("State"),
            {
                "fields": (
                    "status_display",
                    "publication_job",
                    "channel_message_id",
                    "message_deleted",
                    "published_at",
                    "unpinned_at",
                    "deleted_at",
                    "recurrence_of",
                    "copy_of",
                    "channel_outcomes",
                    "statistics",
                    "last_error",
                    "photo_file_id",
                    "created_by",
                    "created_at",
                    "updated_at",
                )
            },
        ),
    )

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "buttons":
            return ButtonsField(label=gettext_lazy("Buttons"))
        if db_field.name == "album":
            return AlbumField(label=gettext_lazy("Album"), help_text=db_field.help_text)
        if db_field.name == "also_to":
            return ChannelsField(
                label=gettext_lazy("Also publish in"), help_text=db_field.help_text
            )
        if db_field.name == "poll_options":
            return PollOptionsField(label=gettext_lazy("Poll options"))
        if db_field.name == "poll_type":
            # Not required: a form without it (a text post) is a regular poll's default.
            return forms.TypedChoiceField(
                label=gettext_lazy("Poll type"),
                choices=PollType.choices,
                required=False,
                empty_value=PollType.REGULAR,
                help_text=db_field.help_text,
            )
        if db_field.name == "poll_explanation":
            kwargs["widget"] = forms.Textarea(attrs={"rows": 2, "cols": 60})
        if db_field.name == "repeat_until":
            # The browser's own date input: Django's calendar script would add its "hours
            # behind server time" note, which the named-zone rule removes.
            kwargs["widget"] = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        if db_field.name == "publish_at":
            return ZonedDateTimeField(label=_PUBLISH_AT_LABEL, required=False)
        if db_field.name in ("delete_at", "unpin_at"):
            return ZonedDateTimeField(
                label=_REMOVAL_LABELS[db_field.name], required=False, help_text=db_field.help_text
            )
        if db_field.name == "channel":  # the bot's chats suggested by title; @name typed
            kwargs["widget"] = ChatDatalistInput(attrs={"size": 40})
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Post | None = None) -> Any:
        """A new post's form shows only what its author sets: no state, job, message id or
        second "Photo" row before there is anything to show."""
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            if obj.status in UNPUBLISHED:
                return fieldsets
            content = fieldsets[0]  # in the channel: nothing more to upload
            fields = tuple(name for name in content[1]["fields"] if name != "album_files")
            return [(content[0], {**content[1], "fields": fields}), *fieldsets[1:]]
        content, poll, publication, repeat = fieldsets[:4]
        fields = tuple(name for name in content[1]["fields"] if name != "photo_preview")
        return [(content[0], {**content[1], "fields": fields}), poll, publication, repeat]

    def get_readonly_fields(self, request: HttpRequest, obj: Post | None = None) -> Any:
        fields = list(self.readonly_fields)
        if obj is None and not self.has_change_permission(request):
            fields.append("publish_at")  # scheduling is publishing: content.change_post
        if obj is not None and obj.status not in UNPUBLISHED:
            fields += [
                "channel",
                "also_to",
                "photo",
                "album",
                "publish_at",
                "silent",
                "pin",
                "poll_question",
                "poll_options",
                "poll_type",
                "poll_explanation",
                "repeat",
                "repeat_until",
            ]  # in the channel (or on the way)
            if obj.status != PostStatus.PUBLISHED:
                fields += ["text", "buttons", "unpin_at", "delete_at"]
        return fields

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> Any:
        # Django 6.1 passes action_location; 5.2 has no such parameter.
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location)  # type: ignore[call-arg]
        actions.pop("delete_selected", None)
        return actions

    def has_delete_permission(self, request: HttpRequest, obj: Post | None = None) -> bool:
        if obj is not None and not (
            obj.status == PostStatus.DRAFT
            or (obj.status == PostStatus.ARCHIVED and obj.channel_message_id is None)
        ):
            return False
        return super().has_delete_permission(request, obj)

    def has_change_and_delete_permission(self, request: HttpRequest) -> bool:
        """For "Archive and delete": it changes the post and deletes its channel message.
        (An action's ``permissions`` are alternatives: any one of them offers it.)"""
        return self.has_change_permission(request) and super().has_delete_permission(request)

    def delete_model(self, request: HttpRequest, obj: Post) -> None:
        with _audited(request, "post.delete", obj.pk):
            services.post_delete_draft(post_id=obj.pk)

    # --- saving through the services ----------------------------------------------------------
    def save_model(self, request: HttpRequest, obj: Post, form: Any, change: bool) -> None:
        try:
            with _audited(request, _save_action(change, form.changed_data), obj.pk) as step:
                if change:
                    self._save_change(obj, form)
                else:
                    self._save_new(request, obj, form)
                step.fields["target_name"] = f"post #{obj.pk}"
                step.detail = ", ".join(form.changed_data)
        except (ValidationError, PostError, TelegramApiError) as exc:
            setattr(request, _FAILED_FLAG, True)
            messages.error(request, _("Not saved: %(error)s") % {"error": _describe(exc)})

    def _save_new(self, request: HttpRequest, obj: Post, form: Any) -> None:
        data = form.cleaned_data
        content = PostContent(
            channel=data["channel"],
            text=data.get("text") or "",
            buttons=data.get("buttons") or [],
            photo=data.get("photo") or None,
            silent=bool(data.get("silent")),
            pin=bool(data.get("pin")),
            poll_question=data.get("poll_question") or "",
            poll_options=data.get("poll_options") or [],
            poll_type=data.get("poll_type") or "regular",
            poll_correct_option=data.get("poll_correct_option"),
            poll_explanation=data.get("poll_explanation") or "",
            delete_at=data.get("delete_at"),
            unpin_at=data.get("unpin_at"),
            repeat=data.get("repeat") or "",
            repeat_until=data.get("repeat_until"),
            also_to=data.get("also_to") or [],
            album=data.get("album") or [],
        )
        _store_album_uploads(form)
        created_by = f"admin:{request.user.get_username()}"
        try:
            post = services.post_create(
                content=content, created_by=created_by, publish_at=data.get("publish_at")
            )
        except ValidationError as exc:
            if "publish_at" not in getattr(exc, "error_dict", {}):
                raise
            post = services.post_create(content=content, created_by=created_by)
            messages.warning(request, _("Saved as a draft: %(error)s") % {"error": _describe(exc)})
        obj.pk, obj.status = post.pk, post.status

    def _save_change(self, obj: Post, form: Any) -> None:
        data, changed = form.cleaned_data, set(form.changed_data)
        photo = data.get("photo") if "photo" in changed else None
        changes = PostChanges(
            text=data.get("text", "") if "text" in changed else None,
            buttons=(data.get("buttons") or []) if "buttons" in changed else None,
            channel=data["channel"] if "channel" in changed else None,
            photo=photo or None,
            remove_photo=photo is False,
            silent=data.get("silent") if "silent" in changed else None,
            pin=data.get("pin") if "pin" in changed else None,
            poll_question=data.get("poll_question", "") if "poll_question" in changed else None,
            poll_options=(data.get("poll_options") or []) if "poll_options" in changed else None,
            poll_type=data.get("poll_type") if "poll_type" in changed else None,
            poll_correct_option=data.get("poll_correct_option"),
            poll_explanation=(
                data.get("poll_explanation", "") if "poll_explanation" in changed else None
            ),
            also_to=(data.get("also_to") or []) if "also_to" in changed else None,
            album=(data.get("album") or []) if changed & {"album", "album_files"} else None,
        )
        _store_album_uploads(form)
        removal = None
        if changed & {"delete_at", "unpin_at"}:
            removal = Removal(delete_at=data.get("delete_at"), unpin_at=data.get("unpin_at"))
        if changes != PostChanges():
            services.post_update(post_id=obj.pk, changes=changes)
        if changed & {"repeat", "repeat_until"}:
            services.post_set_repeat(
                post_id=obj.pk, repeat=data.get("repeat") or "", until=data.get("repeat_until")
            )
        if "publish_at" in changed:
            if data.get("publish_at") is not None:
                services.post_schedule(
                    post_id=obj.pk, publish_at=data["publish_at"], removal=removal
                )
                removal = None
            else:
                services.post_unschedule(post_id=obj.pk)
        if removal is not None:
            services.post_set_removal(post_id=obj.pk, removal=removal)

    def message_user(self, request: HttpRequest, message: Any, *args: Any, **kwargs: Any) -> None:
        level = kwargs.get("level", args[0] if args else messages.INFO)
        if getattr(request, _FAILED_FLAG, False) and level == messages.SUCCESS:
            return  # the save failed: its error is shown instead of "changed successfully"
        super().message_user(request, message, *args, **kwargs)

    class Media:
        js = ("content/post_preview.js",)
        css = {"all": ("content/post_preview.css",)}

    # --- list columns and read-only fields ----------------------------------------------------
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        """The page's channels given by id named by their titles, looked up once."""
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if changelist is not None:
            posts = list(changelist.result_list)
            ids = {post.pk: ascii_int(post.channel, signed=True) for post in posts}
            titles = chat_titles(chat_id for chat_id in ids.values() if chat_id is not None)
            for post in posts:
                post.channel_title = titles.get(ids[post.pk], "")
        return response

    @admin.display(description=gettext_lazy("channel"), ordering="channel")
    def channel_named(self, obj: Post) -> str:
        title = getattr(obj, "channel_title", "")
        return chat_cell(ascii_int(obj.channel, signed=True), title) if title else obj.channel

    @admin.display(description=gettext_lazy("How it will look"))
    def preview(self, obj: Post) -> SafeString:
        """The message as Telegram will show it: the saved post, then asked again of
        ``content-post-preview`` as the author types (``static/content/post_preview.js``)."""
        shown = post_preview(post=obj) if obj.pk else post_preview({})
        return format_html(
            '<div id="post-preview-holder" data-preview-url="{}" data-post-id="{}" '
            'data-has-photo="{}">{}</div>',
            reverse("admin:content-post-preview"),
            obj.pk or "",
            "1" if obj.pk and obj.has_photo else "0",
            SafeString(render_preview(shown)),
        )

    @admin.display(description=gettext_lazy("summary"))
    def summary(self, obj: Post) -> str:
        return obj.summary

    @admin.display(description=gettext_lazy("kind"))
    def kind(self, obj: Post) -> str:
        if obj.repeat:
            return _("recurring")
        if obj.is_album:
            return _("album")
        if obj.is_poll:
            return _("quiz") if obj.is_quiz else _("poll")
        return _("photo") if obj.has_photo else _("text")

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_display(self, obj: Post) -> SafeString:
        note = _(" (outcome unknown: check the channel)") if obj.needs_review else ""
        return format_html(
            '<span class="post-status" data-status="{}">{}{}</span>',
            obj.status,
            obj.get_status_display(),
            note,
        )

    @admin.display(description=gettext_lazy("photo"))
    def photo_preview(self, obj: Post) -> SafeString | str:
        if not obj.pk or not obj.photo:
            return "-"
        url = reverse("admin:content-post-photo", args=[obj.pk])
        return format_html('<img src="{}" alt="{}" style="max-height: 240px">', url, _("photo"))

    @admin.display(description=gettext_lazy("channel statistics"))
    def statistics(self, obj: Post) -> str:
        """What Telegram reports for the channel message, and plainly what it does not."""
        if obj.status not in (PostStatus.PUBLISHED, PostStatus.ARCHIVED) or obj.message_deleted:
            return "-"
        views = _("Views: not available from the Bot API.")
        if not obj.reactions:
            reactions = _(
                "Reactions: none reported yet (Telegram reports them to a bot that administers "
                "the channel, a few minutes late)."
            )
        else:
            counts = ", ".join(f"{r['reaction']} {r['count']}" for r in obj.reactions)
            reactions = _("Reactions: %(counts)s (as of %(when)s).") % {
                "counts": counts,
                "when": zoned(obj.reactions_date),
            }
        return f"{reactions} {views}"

    @admin.display(description=gettext_lazy("other channels"))
    def channel_outcomes(self, obj: Post) -> SafeString | str:
        """One line per other channel: its copy's outcome (published with its message id,
        failed, outcome unknown, or still to come)."""
        if not obj.pk or not obj.also_to:
            return "-"
        copies = {copy.channel: copy for copy in obj.copies.all()}
        rows = []
        for channel in obj.also_to:
            copy = copies.get(channel)
            if copy is None:
                rows.append(
                    format_html("<li>{}: {}</li>", channel, _("when the post is published"))
                )
                continue
            url = reverse("admin:content_post_change", args=[copy.pk])
            outcome = copy.get_status_display()
            if copy.needs_review:
                outcome = _("outcome unknown: check the channel")
            elif copy.channel_message_id:
                outcome = _("%(status)s, message %(message)s") % {
                    "status": outcome,
                    "message": copy.channel_message_id,
                }
            rows.append(
                format_html('<li>{}: <a href="{}">#{}</a> {}</li>', channel, url, copy.pk, outcome)
            )
        return format_html("<ul>{}</ul>", format_html_join("", "{}", ((row,) for row in rows)))

    @admin.display(description=gettext_lazy("publication job"))
    def publication_job(self, obj: Post) -> SafeString | str:
        job = Job.objects.filter(dedupe_key=jobs.dedupe_key(obj.pk)).first() if obj.pk else None
        if job is None:
            return "-"
        url = reverse("admin:telegram_bot_job_change", args=[job.pk])
        return format_html(
            '<a href="{}">{} #{}</a>: {}',
            url,
            job.kind,
            job.pk,
            _("%(status)s, attempts %(attempts)s, next attempt %(next)s")
            % {
                "status": job.get_status_display(),
                "attempts": job.attempts,
                "next": job.next_attempt,
            },
        )

    # --- actions ------------------------------------------------------------------------------
    @admin.action(description=gettext_lazy("Publish now"), permissions=["change"])
    def publish_now(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        for post_id in queryset.values_list("pk", flat=True):
            try:
                with _audited(request, "post.publish", post_id):
                    post = services.post_publish_now(post_id=post_id)
            except TelegramApiError as exc:
                if exc.retryable:
                    messages.warning(
                        request,
                        _(
                            "Post #%(id)s: Telegram did not take it (%(error)s); it will be "
                            "retried automatically."
                        )
                        % {"id": post_id, "error": _describe(exc)},
                    )
                else:
                    messages.error(
                        request,
                        _("Post #%(id)s failed: %(error)s")
                        % {"id": post_id, "error": _describe(exc)},
                    )
            except (PostError, ValidationError) as exc:
                messages.error(
                    request, _("Post #%(id)s: %(error)s") % {"id": post_id, "error": _describe(exc)}
                )
            else:
                messages.success(
                    request,
                    _("Post #%(id)s published in %(channel)s (message %(message)s).")
                    % {"id": post_id, "channel": post.channel, "message": post.channel_message_id},
                )

    @admin.action(
        description=gettext_lazy("Back to draft (cancel the schedule)"), permissions=["change"]
    )
    def unschedule(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        self._each(
            request,
            queryset,
            lambda pk: services.post_unschedule(post_id=pk),
            _("Post #%(id)s is a draft."),
            audit="post.unschedule",
        )

    @admin.action(
        description=gettext_lazy("Archive (keep the channel message)"), permissions=["change"]
    )
    def archive(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        self._each(
            request,
            queryset,
            lambda pk: services.post_archive(post_id=pk),
            _("Post #%(id)s archived."),
            audit="post.archive",
        )

    @admin.action(
        description=gettext_lazy("Archive and delete the channel message"),
        permissions=["change_and_delete"],
    )
    def archive_and_delete(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        self._each(
            request,
            queryset,
            lambda pk: services.post_archive(post_id=pk, delete_message=True),
            _("Post #%(id)s archived, its channel message deleted."),
            audit="post.archive_delete",
        )

    @admin.action(
        description=gettext_lazy("Mark published (outcome unknown, checked the channel)"),
        permissions=["change"],
    )
    def mark_published(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        self._each(
            request,
            queryset,
            lambda pk: services.post_mark_published(post_id=pk),
            _("Post #%(id)s published."),
            audit="post.mark_published",
        )

    @staticmethod
    def _each(
        request: HttpRequest, queryset: QuerySet[Post], action: Any, done: str, *, audit: str
    ) -> None:
        for post_id in queryset.values_list("pk", flat=True):
            try:
                with _audited(request, audit, post_id):
                    action(post_id)
            except (PostError, ValidationError, TelegramApiError) as exc:
                messages.error(
                    request, _("Post #%(id)s: %(error)s") % {"id": post_id, "error": _describe(exc)}
                )
            else:
                messages.success(request, done % {"id": post_id})


def _store_album_uploads(form: Any) -> None:
    """Store the files uploaded for the album under the names its items already give."""
    for name, upload in getattr(form, "album_uploads", []):
        stored = default_storage.save(name, upload)
        if stored != name:  # a generated name is new: this would be a second upload's
            raise ValidationError(_("The album file could not be stored: upload it again."))


def _save_action(change: bool, changed: list[str]) -> str:
    if not change:
        return "post.create"
    return "post.schedule" if changed == ["publish_at"] else "post.edit"


def _audited(
    request: HttpRequest, action: str, post_id: int | None
) -> AbstractContextManager[Step]:
    """Record an action on a post in the audit log (failed when it raises)."""
    return audit_step(
        action, actor=admin_actor(request), source="admin", target_name=f"post #{post_id}"
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(exc.messages)
    if isinstance(exc, PostError):
        return str(exc.user_message)
    if isinstance(exc, TelegramApiError):
        return exc.description or str(exc)
    return str(exc)
