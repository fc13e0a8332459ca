"""Channel posts: what to publish, where, when, and what happened.

Status moves (``services`` and ``publishing`` are the only writers):

- draft      -> scheduled (schedule, publish now), archived
- scheduled  -> publishing (a publication claims it), draft (unschedule), archived
- publishing -> published (Telegram answered with the message), scheduled (an error that the
                job will retry), failed (a permanent error, the last retry, or an attempt that
                ended without knowing whether Telegram published it: ``outcome_unknown``)
- published  -> archived (optionally deleting the channel message; at ``delete_at`` the
                ``content.expire`` job deletes it); edits keep it published
- failed     -> scheduled (publish now, schedule), draft (unschedule), archived, published (an
                operator checked the channel; or the late answer of a slow attempt)
- archived   -> final

``attempt_token`` and ``attempt_deadline`` describe the Telegram call in flight for this post
(a publication, an edit, a deletion): who may record its result, and until when its process
can still be waiting for Telegram's answer.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from content import validation


class PostStatus(models.TextChoices):
    DRAFT = "draft", _("draft")
    SCHEDULED = "scheduled", _("scheduled")
    PUBLISHING = "publishing", _("publishing")
    PUBLISHED = "published", _("published")
    FAILED = "failed", _("failed")
    ARCHIVED = "archived", _("archived")


# Statuses whose content can be edited in the database alone (nothing is in the channel).
UNPUBLISHED = (PostStatus.DRAFT, PostStatus.SCHEDULED, PostStatus.FAILED)


class PollType(models.TextChoices):
    REGULAR = "regular", _("regular poll")
    QUIZ = "quiz", _("quiz (one correct answer)")


class Repeat(models.TextChoices):
    NEVER = "", _("never")
    DAILY = "daily", _("every day")
    WEEKDAYS = "weekdays", _("every weekday (Monday to Friday)")
    WEEKLY = "weekly", _("every week")


class Post(models.Model):
    """One channel post: a text, or a photo with a caption; optional inline URL buttons."""

    text = models.TextField(
        _("text"),
        blank=True,
        help_text=_("The message (up to 4096 characters), or the photo's caption (up to 1024)."),
    )
    photo = models.FileField(
        _("photo"),
        upload_to=validation.photo_upload_to,
        blank=True,
        validators=[validation.check_photo_file],
        help_text=_("JPEG, PNG or WebP, at most 10 MB, sent to Telegram as a file."),
    )
    # Telegram's id of the photo once it was sent (or when it came from the panel).
    photo_file_id = models.CharField(_("photo file id"), max_length=255, blank=True)
    album = models.JSONField(
        _("album"),
        default=list,
        blank=True,
        help_text=_(
            "2 to 10 photos or videos sent together, one per line: the word photo or video, "
            "a space, then a Telegram file id or an https link. The text is the album's "
            "caption (up to 1024 characters); an album has no buttons."
        ),
    )
    # The ids of the album's messages once published (the first is channel_message_id).
    album_message_ids = models.JSONField(
        _("album message ids"), default=list, blank=True, editable=False
    )
    poll_question = models.CharField(
        _("poll question"),
        max_length=300,
        blank=True,
        help_text=_("A poll instead of a message: its question (up to 300 characters)."),
    )
    poll_options = models.JSONField(
        _("poll options"),
        default=list,
        blank=True,
        help_text=_("2 to 10 answers, one per line, up to 100 characters each."),
    )
    poll_type = models.CharField(
        _("poll type"),
        max_length=10,
        choices=PollType.choices,
        default=PollType.REGULAR,
        help_text=_("A quiz has one correct answer: start its line in the options with *."),
    )
    # The quiz's correct option (0-based), set from the option marked with * in the form.
    poll_correct_option = models.PositiveSmallIntegerField(
        _("correct option"), null=True, blank=True, editable=False
    )
    poll_explanation = models.CharField(
        _("quiz explanation"),
        max_length=200,
        blank=True,
        help_text=_(
            "Shown after a wrong answer (a quiz only): up to 200 characters, at most 2 line breaks."
        ),
    )
    buttons = models.JSONField(
        _("buttons"), default=list, blank=True, help_text=_('Rows of {"text": label, "url": link}.')
    )
    silent = models.BooleanField(
        _("silent"), default=False, help_text=_("Published without a notification sound.")
    )
    pin = models.BooleanField(
        _("pin"), default=False, help_text=_("Pinned in the channel once published.")
    )
    pinned = models.BooleanField(_("pinned"), default=False, editable=False)
    unpin_at = models.DateTimeField(
        _("unpin at"),
        null=True,
        blank=True,
        help_text=_("A pinned post is unpinned then (empty: it stays pinned)."),
    )
    unpinned_at = models.DateTimeField(_("unpinned at"), null=True, blank=True, editable=False)
    delete_at = models.DateTimeField(
        _("delete at"),
        null=True,
        blank=True,
        help_text=_("The channel message is deleted then and the post archived (empty: never)."),
    )
    deleted_at = models.DateTimeField(_("deleted at"), null=True, blank=True, editable=False)
    repeat = models.CharField(
        _("repeat"),
        max_length=10,
        choices=Repeat.choices,
        default=Repeat.NEVER,
        blank=True,
        help_text=_(
            "A recurring post is published again at the same local time as its first "
            "publication, until the end date; each occurrence is a post of its own."
        ),
    )
    repeat_until = models.DateField(
        _("repeat until"), null=True, blank=True, help_text=_("The last day (inclusive).")
    )
    # The zone the occurrences' local time is kept in (the console's, when it was set).
    repeat_zone = models.CharField(_("repeat zone"), max_length=64, blank=True, editable=False)
    recurrence_of = models.ForeignKey(
        "self",
        verbose_name=_("occurrence of"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="occurrences",
    )
    # "<recurring post id>:<local date>": each occurrence is created once.
    occurrence_key = models.CharField(
        _("occurrence key"), max_length=40, null=True, blank=True, unique=True, editable=False
    )
    also_to = models.JSONField(
        _("also publish in"),
        default=list,
        blank=True,
        help_text=_(
            "Other channels, one per line (@username or -100… id), at most 10: each gets a "
            "copy of its own when the post is published, published once."
        ),
    )
    copy_of = models.ForeignKey(
        "self",
        verbose_name=_("copy of"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="copies",
    )
    # "<post id>:<channel>": each channel's copy is created once.
    copy_key = models.CharField(
        _("copy key"), max_length=100, null=True, blank=True, unique=True, editable=False
    )
    channel = models.CharField(
        _("channel"), max_length=64, help_text=_("The target channel: @username or its id (-100…).")
    )
    publish_at = models.DateTimeField(_("publish at"), null=True, blank=True, db_index=True)
    status = models.CharField(
        _("status"),
        max_length=20,
        choices=PostStatus.choices,
        default=PostStatus.DRAFT,
        db_index=True,
    )
    channel_message_id = models.BigIntegerField(_("channel message id"), null=True, blank=True)
    message_deleted = models.BooleanField(
        _("message deleted"),
        default=False,
        help_text=_("The channel message was deleted when the post was archived."),
    )
    # Failed because an attempt ended without knowing whether Telegram published the post:
    # an operator checks the channel, then marks it published or publishes it again.
    outcome_unknown = models.BooleanField(_("outcome unknown"), default=False)
    last_error = models.TextField(_("last error"), blank=True)
    attempt_token = models.CharField(_("attempt token"), max_length=32, blank=True)
    attempt_deadline = models.DateTimeField(_("attempt deadline"), null=True, blank=True)
    # Telegram's reaction counts of the channel message (message_reaction_count updates).
    reactions = models.JSONField(_("reactions"), default=list, blank=True, editable=False)
    reactions_date = models.DateTimeField(
        _("reactions as of"), null=True, blank=True, editable=False
    )
    created_by = models.CharField(_("created by"), max_length=100, blank=True)
    # The Telegram update that created the post (panel): a re-delivery creates nothing twice.
    source_update_id = models.BigIntegerField(
        _("source update id"), null=True, blank=True, unique=True
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now, editable=False)
    published_at = models.DateTimeField(_("published at"), null=True, blank=True)

    class Meta:
        verbose_name = _("post")
        verbose_name_plural = _("posts")
        db_table = "content_post"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.summary}"

    @property
    def has_photo(self) -> bool:
        return bool(self.photo) or bool(self.photo_file_id)

    @property
    def is_album(self) -> bool:
        return bool(self.album)

    @property
    def has_caption(self) -> bool:
        """The text is a caption (at most 1024 characters, may be empty): a photo, an album."""
        return self.has_photo or self.is_album

    @property
    def is_poll(self) -> bool:
        return bool(self.poll_question) or bool(self.poll_options)

    @property
    def is_recurring(self) -> bool:
        return bool(self.repeat)

    @property
    def is_quiz(self) -> bool:
        return self.poll_type == PollType.QUIZ

    @property
    def summary(self) -> str:
        """A one-line label: the start of the text (a poll's question)."""
        text = " ".join((self.poll_question or self.text).split())
        if not text:
            if self.is_album:
                return "(album)"
            return "(photo)" if self.has_photo else "(empty)"
        return text if len(text) <= 40 else text[:39] + "…"

    @property
    def needs_review(self) -> bool:
        return self.status == PostStatus.FAILED and self.outcome_unknown

    def clean(self) -> None:
        """Telegram's limits, checked on every save through a form or a service."""
        self.channel = validation.normalize_channel(self.channel)
        self.also_to = validation.check_also_to(self.also_to, channel=self.channel)
        if self.is_album:
            self.album = validation.check_album(
                self.album,
                text=self.text,
                others=self.has_photo or self.is_poll,
                buttons=bool(self.buttons),
            )
        if self.is_poll:
            self.poll_question, self.poll_options = validation.check_poll(
                self.poll_question, self.poll_options, text=self.text, has_photo=self.has_photo
            )
            self.poll_explanation = validation.check_quiz(
                self.poll_type,
                self.poll_correct_option,
                self.poll_explanation,
                options=len(self.poll_options),
            )
        elif self.is_quiz or self.poll_explanation.strip():
            raise ValidationError({"poll_question": _("A quiz needs a question and options.")})
        else:
            validation.check_text(self.text, has_photo=self.has_caption)
        self.buttons = validation.check_buttons(self.buttons)
        validation.check_removal(
            publish_at=self.publish_at,
            delete_at=self.delete_at,
            unpin_at=self.unpin_at,
            pin=self.pin,
        )
        if self.repeat and not self.repeat_zone:
            self.repeat_zone = timezone.get_current_timezone_name()
        validation.check_repeat(
            self.repeat,
            self.repeat_until,
            publish_at=self.publish_at,
            zone_name=self.repeat_zone,
            has_removal=self.delete_at is not None or self.unpin_at is not None,
        )
