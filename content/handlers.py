"""Telegram handlers of the content app: posts in the admin panel (list, view, actions) and the
conversations that create, schedule and edit a post. Thin: parse, call a service, show.

Creation (workflow ``content.create``): channel -> content (a text, or a photo with a
caption) -> buttons (or Skip); the draft is then created and previewed in the chat, with
"Publish now" and "Schedule…". Scheduling (``content.schedule``) asks for a time, editing
(``content.edit``) for the new text or buttons. Callback data: see ``content.panel``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_lazy

from content import conf, delivery, panel, selectors, services, validation
from content.errors import PostError
from content.models import Post
from content.reactions import ReactionCount, post_reactions_record
from content.services import PostChanges, PostContent
from telegram_bot.admins import Role
from telegram_bot.audit import Step, update_step
from telegram_bot.errors import TelegramApiError, WorkflowError
from telegram_bot.numbers import ascii_int
from telegram_bot.pipeline.context import Context
from telegram_bot.pipeline.router import PanelEntry, Route
from telegram_bot.state.workflows import Workflow, WorkflowKind, WorkflowStore

# The panel's conversations (their shapes: version 1, see telegram_bot.state.workflows).
CREATE = WorkflowKind("content.create")  # steps channel, content, buttons; data: the draft
SCHEDULE = WorkflowKind("content.schedule")  # step time; data: post_id
EDIT = WorkflowKind("content.edit")  # step text or buttons; data: post_id


def callback(ctx: Context) -> None:
    """Every ``content:`` button: ``content:<action>[:<argument>]``."""
    action, _, argument = ctx.update.callback_data.removeprefix("content:").partition(":")
    handler = _CALLBACKS.get(action)
    if handler is None:
        ctx.answer_callback(gettext("This button is not valid."), alert=True)
        return
    handler(ctx, argument)


# --- list and view ----------------------------------------------------------------------------
def _list(ctx: Context, argument: str) -> None:
    ctx.answer_callback()
    _show_list(ctx, ascii_int(argument, digits=6) or 0)


def _show_list(ctx: Context, page: int) -> None:
    posts, has_next = selectors.posts_page(page, size=panel.page_size())
    _show(ctx, *panel.list_view(posts, page=page, has_next=has_next))


def _view(ctx: Context, argument: str) -> None:
    post = _post(ctx, argument)
    if post is not None:
        ctx.answer_callback()
        _show(ctx, *panel.post_view(post))


def _preview_button(ctx: Context, argument: str) -> None:
    post = _post(ctx, argument)
    if post is not None:
        ctx.answer_callback()
        _preview(ctx, post)


# --- actions ----------------------------------------------------------------------------------
def _publish(ctx: Context, argument: str) -> None:
    post = _post(ctx, argument)
    if post is None:
        return
    try:
        with _audited(ctx, "post.publish", post.pk):
            post = services.post_publish_now(post_id=post.pk)
    except (PostError, ValidationError, TelegramApiError) as exc:
        ctx.answer_callback(_short(_publish_problem(exc)), alert=True)
    else:
        ctx.answer_callback(gettext("Published in %(channel)s.") % {"channel": post.channel})
    _refresh(ctx, post.pk)


def _publish_problem(exc: Exception) -> str:
    if isinstance(exc, TelegramApiError):
        if exc.retryable:
            reason = exc.description or gettext("no answer")
            return gettext(
                "Telegram did not take it (%(reason)s). It will be retried automatically."
            ) % {"reason": reason}
        return gettext("Telegram refused it: %(error)s. The post is marked failed.") % {
            "error": exc.description
        }
    return _message(exc)


def _unschedule(ctx: Context, argument: str) -> None:
    _act(
        ctx,
        argument,
        "post.unschedule",
        lambda pk: services.post_unschedule(post_id=pk),
        gettext("Back to draft."),
    )


def _archive(ctx: Context, argument: str) -> None:
    _act(
        ctx,
        argument,
        "post.archive",
        lambda pk: services.post_archive(post_id=pk),
        gettext("Archived."),
    )


def _archive_delete_confirm(ctx: Context, argument: str) -> None:
    post = _post(ctx, argument)
    if post is not None:
        ctx.answer_callback()
        _show(ctx, *panel.confirm_delete_view(post))


def _archive_delete(ctx: Context, argument: str) -> None:
    _act(
        ctx,
        argument,
        "post.archive_delete",
        lambda pk: services.post_archive(post_id=pk, delete_message=True),
        gettext("Archived; the channel message is deleted."),
    )


def _mark_published(ctx: Context, argument: str) -> None:
    _act(
        ctx,
        argument,
        "post.mark_published",
        lambda pk: services.post_mark_published(post_id=pk),
        gettext("Marked published."),
    )


def _delete_draft(ctx: Context, argument: str) -> None:
    post = _post(ctx, argument)
    if post is None:
        return
    try:
        with _audited(ctx, "post.delete", post.pk):
            services.post_delete_draft(post_id=post.pk)
    except PostError as exc:
        ctx.answer_callback(_short(exc.user_message), alert=True)
        return
    ctx.answer_callback(gettext("Deleted."))
    _show_list(ctx, 0)


def _act(ctx: Context, argument: str, name: str, action: Callable[[int], Post], done: str) -> None:
    post = _post(ctx, argument)
    if post is None:
        return
    try:
        with _audited(ctx, name, post.pk):
            action(post.pk)
    except (PostError, TelegramApiError) as exc:
        ctx.answer_callback(_short(_message(exc)), alert=True)
    else:
        ctx.answer_callback(done)
    _refresh(ctx, post.pk)


# --- creation ---------------------------------------------------------------------------------
def _new(ctx: Context, argument: str) -> None:
    ctx.answer_callback()
    _flows(ctx).start(
        chat_id=_chat(ctx),
        user_id=_user(ctx),
        name=CREATE.name,
        step="channel",
        ttl_ms=conf.workflow_ttl_ms(),
    )
    ctx.reply(panel.ASK_CHANNEL, reply_markup=panel.channel_choices(selectors.recent_channels()))


def _channel_button(ctx: Context, argument: str) -> None:
    workflow = _current(ctx, CREATE)
    if workflow is None or workflow.step != "channel":
        ctx.answer_callback(panel.EXPIRED, alert=True)
        return
    ctx.answer_callback()
    _set_channel(ctx, workflow, argument)


def _skip_buttons(ctx: Context, argument: str) -> None:
    workflow = _current(ctx, CREATE)
    if workflow is None or workflow.step != "buttons":
        ctx.answer_callback(panel.EXPIRED, alert=True)
        return
    ctx.answer_callback()
    _create(ctx, workflow, [])


def _cancel(ctx: Context, argument: str) -> None:
    _flows(ctx).cancel(chat_id=_chat(ctx), user_id=_user(ctx))
    ctx.answer_callback(gettext("Cancelled."))
    _show(
        ctx,
        gettext("Cancelled."),
        panel.keyboard([panel.button(gettext("« Posts"), "content:list:0")]),
    )


def create_step(ctx: Context) -> None:
    """A message in the creation conversation: the channel, the content, or the buttons."""
    workflow = _active(ctx)
    if workflow is None:
        return
    if workflow.step == "channel":
        _set_channel(ctx, workflow, ctx.update.text)
    elif workflow.step == "content":
        _set_content(ctx, workflow)
    else:
        try:
            buttons = validation.parse_buttons(ctx.update.text)
        except ValidationError as exc:
            ctx.reply(_message(exc), reply_markup=panel.skip_or_cancel())
            return
        _create(ctx, workflow, buttons)


def _set_channel(ctx: Context, workflow: Workflow, value: str) -> None:
    try:
        channel = validation.normalize_channel(value)
    except ValidationError as exc:
        ctx.reply(_message(exc), reply_markup=panel.cancel_only())
        return
    if _advance(ctx, workflow, "content", {"channel": channel}):
        ctx.reply(
            gettext("Channel: %(channel)s.") % {"channel": channel} + f"\n{panel.ASK_CONTENT}",
            reply_markup=panel.cancel_only(),
        )


def _set_content(ctx: Context, workflow: Workflow) -> None:
    message = ctx.update.message
    photos = (message.photo if message is not None else None) or []
    file_id = photos[-1].file_id if photos else ""
    if message is None or (not photos and message.text is None):
        ctx.reply(
            gettext("Send a text, or a photo with a caption."), reply_markup=panel.cancel_only()
        )
        return
    text = (message.caption if photos else message.text) or ""
    try:
        validation.check_text(text, has_photo=bool(file_id))
    except ValidationError as exc:
        ctx.reply(_message(exc), reply_markup=panel.cancel_only())
        return
    data = {**workflow.data, "text": text, "photo_file_id": file_id}
    if _advance(ctx, workflow, "buttons", data):
        ctx.reply(panel.ASK_BUTTONS, reply_markup=panel.skip_or_cancel())


def _create(ctx: Context, workflow: Workflow, buttons: validation.Buttons) -> None:
    data = workflow.data
    content = PostContent(
        channel=str(data.get("channel", "")),
        text=str(data.get("text", "")),
        buttons=buttons,
        photo_file_id=str(data.get("photo_file_id", "")),
    )
    try:
        with _audited(ctx, "post.create", None) as step:
            post = services.post_create(
                content=content,
                created_by=f"telegram:{_user(ctx)}",
                source_update_id=ctx.update.update_id,
            )
            step.fields["target_name"] = f"post #{post.pk}"
    except ValidationError as exc:
        ctx.reply(_message(exc), reply_markup=panel.cancel_only())
        return
    _flows(ctx).finish(workflow)
    _preview(ctx, post)


def _preview(ctx: Context, post: Post) -> None:
    """Send the post to this chat exactly as the channel will get it, then the choices."""
    try:
        message = delivery.send(delivery.outgoing(post, chat_id=_chat(ctx)))
    except TelegramApiError as exc:
        ctx.reply(gettext("The preview failed: %(error)s") % {"error": exc.description or exc})
    else:
        services.post_photo_remember(
            post_id=post.pk, photo=post.photo.name, file_id=delivery.sent_photo_file_id(message)
        )
    text, markup = panel.preview_controls(post)
    ctx.reply(text, reply_markup=markup)


# --- scheduling and editing -------------------------------------------------------------------
def _ask_time(ctx: Context, argument: str) -> None:
    _ask(ctx, argument, SCHEDULE, "time", panel.ASK_TIME)


def _ask_text(ctx: Context, argument: str) -> None:
    _ask(ctx, argument, EDIT, "text", panel.ASK_TEXT)


def _ask_buttons(ctx: Context, argument: str) -> None:
    prompt = gettext(
        "Send the new buttons: one row per line, each button as 'Label | https://…', "
        "several in a row separated by '&&'. Send '-' for no buttons."
    )
    _ask(ctx, argument, EDIT, "buttons", prompt)


def _ask(ctx: Context, argument: str, kind: WorkflowKind, step: str, prompt: str) -> None:
    post = _post(ctx, argument)
    if post is None:
        return
    ctx.answer_callback()
    _flows(ctx).start(
        chat_id=_chat(ctx),
        user_id=_user(ctx),
        name=kind.name,
        step=step,
        ttl_ms=conf.workflow_ttl_ms(),
        data={"post_id": post.pk},
    )
    ctx.reply(
        gettext("Post #%(id)s.") % {"id": post.pk} + f" {prompt}", reply_markup=panel.cancel_only()
    )


def schedule_step(ctx: Context) -> None:
    """The time for ``content.schedule``: a UTC time or +2h; a past time is refused."""
    workflow = _active(ctx)
    if workflow is None:
        return
    post_id = int(workflow.data["post_id"])
    try:
        with _audited(ctx, "post.schedule", post_id):
            publish_at = validation.parse_publish_time(ctx.update.text)
            post = services.post_schedule(post_id=post_id, publish_at=publish_at)
    except (ValidationError, PostError) as exc:
        ctx.reply(_message(exc), reply_markup=panel.cancel_only())
        return
    _flows(ctx).finish(workflow)
    text, markup = panel.post_view(post)
    ctx.reply(
        gettext("Scheduled for %(when)s.") % {"when": panel.when(post.publish_at)} + f"\n\n{text}",
        reply_markup=markup,
    )


def edit_step(ctx: Context) -> None:
    """The new text or buttons for ``content.edit``; a published post is edited in place."""
    workflow = _active(ctx)
    if workflow is None:
        return
    post_id = int(workflow.data["post_id"])
    if not ctx.update.text.strip():
        # A sticker, a voice message, a location: no text to take. Read as "" it wiped a
        # published caption (or every button) at once.
        ctx.reply(
            gettext("That message has no text. Send the new text as a message, or Cancel."),
            reply_markup=panel.cancel_only(),
        )
        return
    try:
        with _audited(ctx, "post.edit", post_id) as step:
            step.detail = workflow.step
            if workflow.step == "text":
                changes = PostChanges(text=ctx.update.text)
            else:
                raw = ctx.update.text.strip()
                changes = PostChanges(buttons=[] if raw == "-" else validation.parse_buttons(raw))
            post = services.post_update(post_id=post_id, changes=changes)
    except (ValidationError, PostError, TelegramApiError) as exc:
        ctx.reply(_message(exc), reply_markup=panel.cancel_only())
        return
    _flows(ctx).finish(workflow)
    text, markup = panel.post_view(post)
    ctx.reply(gettext("Saved.") + f"\n\n{text}", reply_markup=markup)


# --- helpers ----------------------------------------------------------------------------------
def _audited(ctx: Context, action: str, post_id: int | None) -> AbstractContextManager[Step]:
    """Record an action of the panel on a post (once per update; failed when it raises)."""
    return update_step(ctx.update, action, source="panel", target_name=f"post #{post_id}")


def _flows(ctx: Context) -> WorkflowStore:
    return WorkflowStore(ctx.store, CREATE, SCHEDULE, EDIT)


def _chat(ctx: Context) -> int:
    return int(ctx.chat_id or 0)


def _user(ctx: Context) -> int:
    return int(ctx.sender.user_id or 0)


def _current(ctx: Context, kind: WorkflowKind) -> Workflow | None:
    workflow = _flows(ctx).get(chat_id=_chat(ctx), user_id=_user(ctx))
    if workflow is None or workflow.name != kind.name or workflow.expired or workflow.unreadable:
        return None
    return workflow


def _active(ctx: Context) -> Workflow | None:
    """The sender's workflow for this message; an expired one, or one of a version this build
    cannot read, is ended with a notice."""
    workflow = _flows(ctx).get(chat_id=_chat(ctx), user_id=_user(ctx))
    if workflow is None:
        return None
    if workflow.expired or workflow.unreadable:
        _flows(ctx).cancel(chat_id=_chat(ctx), user_id=_user(ctx))
        ctx.reply(panel.EXPIRED if workflow.expired else panel.UNREADABLE)
        return None
    return workflow


def _advance(ctx: Context, workflow: Workflow, step: str, data: dict[str, object]) -> bool:
    try:
        _flows(ctx).advance(workflow, step=step, data=data, ttl_ms=conf.workflow_ttl_ms())
    except WorkflowError as exc:
        ctx.reply(exc.user_message)
        return False
    return True


def _post(ctx: Context, argument: str) -> Post | None:
    post_id = ascii_int(argument)
    post = selectors.post_find(post_id) if post_id is not None else None
    if post is None:
        ctx.answer_callback(gettext("This post does not exist any more."), alert=True)
    return post


def _refresh(ctx: Context, post_id: int) -> None:
    post = selectors.post_find(post_id)
    if post is not None:
        _show(ctx, *panel.post_view(post))


def _show(ctx: Context, text: str, markup: panel.Markup) -> None:
    """Replace the pressed button's message (a callback), else send a new message."""
    if ctx.update.type != "callback_query":
        ctx.reply(text, reply_markup=markup)
        return
    ctx.edit_callback_message(text, reply_markup=markup)


def _short(text: str) -> str:
    """A callback answer holds at most 200 characters."""
    return text if len(text) <= 200 else text[:199] + "…"


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(exc.messages)[:1000]
    if isinstance(exc, PostError):
        return exc.user_message[:1000]
    if isinstance(exc, TelegramApiError):
        return (gettext("Telegram refused it: %(error)s") % {"error": exc.description or exc})[
            :1000
        ]
    return str(exc)[:1000]


_CALLBACKS: dict[str, Callable[[Context, str], None]] = {
    "list": _list,
    "view": _view,
    "pre": _preview_button,
    "pub": _publish,
    "sched": _ask_time,
    "unsched": _unschedule,
    "edit": _ask_text,
    "btn": _ask_buttons,
    "arch": _archive,
    "archdel": _archive_delete_confirm,
    "archdelok": _archive_delete,
    "ok": _mark_published,
    "del": _delete_draft,
    "new": _new,
    "ch": _channel_button,
    "skip": _skip_buttons,
    "cancel": _cancel,
}


def on_reaction_count(ctx: Context) -> None:
    """A channel message's reaction counts (``message_reaction_count``): recorded on its
    post; a malformed one, or one about a message that is no post, changes nothing."""
    data = (ctx.update.model_extra or {}).get("message_reaction_count")
    counts = ReactionCount.from_update(data) if isinstance(data, dict) else None
    if counts is not None:
        post_reactions_record(counts=counts)


ROUTES: list[Route] = [
    Route.on_update("message_reaction_count", on_reaction_count),
    Route.on_callback("content:", callback, role=Role.ADMIN),
    Route.on_workflow(CREATE.name, create_step, role=Role.ADMIN),
    Route.on_workflow(SCHEDULE.name, schedule_step, role=Role.ADMIN),
    Route.on_workflow(EDIT.name, edit_step, role=Role.ADMIN),
]
PANEL_ENTRIES: list[PanelEntry] = [
    PanelEntry(gettext_lazy("Channel posts"), "content:list:0", order=300)
]
