"""A chat's rules: locks (kinds of message not allowed), the link domains its url lock allows,
its blocklist (words and phrases not allowed) and its approved members (exempt from them)."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from moderation.models import MAX_SECONDS, MIN_SECONDS, Action
from moderation.rules.kinds import KIND_CHOICES

# What a rule does to the message that breaks it: every one deletes it; warn, mute and ban
# also act on its author (through moderation's services).
RULE_ACTIONS = [(a.value, a.label) for a in (Action.DELETE, Action.WARN, Action.MUTE, Action.BAN)]


def _seconds() -> models.PositiveIntegerField:
    return models.PositiveIntegerField(
        _("duration (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_SECONDS), MaxValueValidator(MAX_SECONDS)],
        help_text=_("How long a mute or ban lasts; empty: for ever."),
    )


class Lock(models.Model):
    chat_id = models.BigIntegerField(_("chat id"))
    kind = models.CharField(_("kind"), max_length=20, choices=KIND_CHOICES)
    action = models.CharField(
        _("action"), max_length=10, choices=RULE_ACTIONS, default=Action.DELETE
    )
    seconds = _seconds()
    message = models.CharField(
        _("message"),
        max_length=500,
        blank=True,
        help_text=_(
            "Said in the chat when the lock deletes a message ({first}: the member's first "
            "name); empty: nothing is said."
        ),
    )
    created_by = models.BigIntegerField(_("set by"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("lock")
        verbose_name_plural = _("locks")
        ordering = ["chat_id", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "kind"], name="rules_lock_one_per_kind")
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.chat_id}"


class AllowedDomain(models.Model):
    """A link domain the url lock lets through (its subdomains too)."""

    chat_id = models.BigIntegerField(_("chat id"))
    domain = models.CharField(_("domain"), max_length=253)
    created_by = models.BigIntegerField(_("added by"), null=True, blank=True)
    created_at = models.DateTimeField(_("added"), auto_now_add=True)

    class Meta:
        verbose_name = _("allowed link domain")
        verbose_name_plural = _("allowed link domains")
        ordering = ["chat_id", "domain"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "domain"], name="rules_domain_once")
        ]

    def __str__(self) -> str:
        return f"{self.domain} in {self.chat_id}"


class BlocklistEntry(models.Model):
    """A word or phrase not allowed in a chat; ``*`` stands for any letters inside a word.
    Matched case- and diacritic-insensitively (``moderation.rules.blocklist``)."""

    chat_id = models.BigIntegerField(_("chat id"))
    pattern = models.CharField(_("word or phrase"), max_length=100)
    action = models.CharField(
        _("action"), max_length=10, choices=RULE_ACTIONS, default=Action.DELETE
    )
    seconds = _seconds()
    created_by = models.BigIntegerField(_("added by"), null=True, blank=True)
    created_at = models.DateTimeField(_("added"), auto_now_add=True)

    class Meta:
        verbose_name = _("blocklist entry")
        verbose_name_plural = _("blocklist entries")
        ordering = ["chat_id", "pattern"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "pattern"], name="rules_blocklist_once")
        ]

    def __str__(self) -> str:
        return f"{self.pattern} in {self.chat_id}"


class Approval(models.Model):
    """An approved member: exempt from the chat's locks, blocklist, anti-flood and captcha."""

    chat_id = models.BigIntegerField(_("chat id"))
    user_id = models.BigIntegerField(_("user id"))
    name = models.CharField(_("name"), max_length=200, blank=True)
    approved_by = models.BigIntegerField(_("approved by"), null=True, blank=True)
    created_at = models.DateTimeField(_("approved"), auto_now_add=True)

    class Meta:
        verbose_name = _("approved member")
        verbose_name_plural = _("approved members")
        ordering = ["chat_id", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="rules_approval_once")
        ]

    def __str__(self) -> str:
        return f"{self.name or self.user_id} in {self.chat_id}"


class SavedReply(models.Model):
    """What a note or a filter answers: a text (with its link buttons) or a media file."""

    text = models.TextField(_("text"), blank=True, max_length=4096)
    buttons = models.JSONField(_("buttons"), default=list, blank=True)
    media_kind = models.CharField(_("media kind"), max_length=20, blank=True)
    file_id = models.CharField(_("file id"), max_length=200, blank=True)
    created_by = models.BigIntegerField(_("saved by"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        abstract = True


class Note(SavedReply):
    """A note: ``#name`` or ``/get name`` answers it; an admin-only one only to admins."""

    chat_id = models.BigIntegerField(_("chat id"))
    name = models.CharField(_("name"), max_length=64)
    admin_only = models.BooleanField(_("admins only"), default=False)

    class Meta:
        verbose_name = _("note")
        verbose_name_plural = _("notes")
        ordering = ["chat_id", "name"]
        constraints = [models.UniqueConstraint(fields=["chat_id", "name"], name="rules_note_once")]

    def __str__(self) -> str:
        return f"#{self.name} in {self.chat_id}"


class Filter(SavedReply):
    """A filter: a member's message holding the keyword or phrase gets this answer."""

    chat_id = models.BigIntegerField(_("chat id"))
    keyword = models.CharField(_("keyword or phrase"), max_length=100)

    class Meta:
        verbose_name = _("filter")
        verbose_name_plural = _("filters")
        ordering = ["chat_id", "keyword"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "keyword"], name="rules_filter_once")
        ]

    def __str__(self) -> str:
        return f"{self.keyword} in {self.chat_id}"


class Report(models.Model):
    """A member's message that members reported to the chat's admins (``/report`` or
    ``@admin`` in reply to it): one per message, however many report it; decided once, by the
    first admin who presses a button on its notice."""

    class Status(models.TextChoices):
        OPEN = "open", _("open")
        DECIDED = "decided", _("decided")

    class Decision(models.TextChoices):
        DELETE = "delete", _("message deleted")
        WARN = "warn", _("deleted, author warned")
        MUTE = "mute", _("deleted, author muted for 1 hour")
        BAN = "ban", _("deleted, author banned")
        DISMISS = "dismiss", _("dismissed")

    chat_id = models.BigIntegerField(_("chat id"))
    chat_title = models.CharField(_("chat"), max_length=200, blank=True)
    message_id = models.BigIntegerField(_("message id"))
    target_id = models.BigIntegerField(_("author id"))
    target_name = models.CharField(_("author"), max_length=200, blank=True)
    excerpt = models.CharField(_("message"), max_length=300, blank=True)
    reported_at = models.DateTimeField(_("reported"), auto_now_add=True, db_index=True)
    notified = models.BooleanField(_("admins notified"), default=False)
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.OPEN
    )
    decision = models.CharField(_("decision"), max_length=10, choices=Decision.choices, blank=True)
    decided_by_id = models.BigIntegerField(_("decided by (id)"), null=True, blank=True)
    decided_by_name = models.CharField(_("decided by"), max_length=200, blank=True)
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)
    # The button press that decided it: its re-delivery carries the decision out again
    # (idempotently), any other press is told who decided.
    decided_update = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("report")
        verbose_name_plural = _("reports")
        ordering = ["-reported_at"]
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "message_id"], name="rules_report_once")
        ]

    def __str__(self) -> str:
        return f"report of {self.message_id} in {self.chat_id}"


class ReportFlag(models.Model):
    """One member's report of a message: a member reports a message once."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="flags")
    reporter_id = models.BigIntegerField(_("reporter id"))
    reporter_name = models.CharField(_("reporter"), max_length=200, blank=True)
    update_id = models.BigIntegerField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("reported"), auto_now_add=True)

    class Meta:
        verbose_name = _("report by a member")
        verbose_name_plural = _("reports by members")
        constraints = [
            models.UniqueConstraint(fields=["report", "reporter_id"], name="rules_report_flag_once")
        ]
        indexes = [models.Index(fields=["reporter_id", "created_at"], name="rules_report_by")]

    def __str__(self) -> str:
        return f"{self.reporter_id} reported {self.report_id}"


class ReportNotice(models.Model):
    """A report's notice in an admin's private chat (edited when the report is decided)."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="notices")
    chat_id = models.BigIntegerField()
    message_id = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["report", "chat_id"], name="rules_report_notice_once")
        ]

    def __str__(self) -> str:
        return f"notice of {self.report_id} in {self.chat_id}"


class ReportSetting(models.Model):
    """Whether members of a chat can report (``/reports on|off`` in the group; on without a
    row)."""

    chat_id = models.BigIntegerField(_("chat id"), unique=True)
    enabled = models.BooleanField(_("members can report"), default=True)

    class Meta:
        verbose_name = _("report setting")
        verbose_name_plural = _("report settings")

    def __str__(self) -> str:
        return f"reports {'on' if self.enabled else 'off'} in {self.chat_id}"


class ReportOptIn(models.Model):
    """An admin who gets reports in private (``/reports on`` in a private chat with the bot),
    from every chat where they are an admin at the time of the report."""

    user_id = models.BigIntegerField(_("user id"), unique=True)
    created_at = models.DateTimeField(_("since"), auto_now_add=True)

    class Meta:
        verbose_name = _("admin getting reports")
        verbose_name_plural = _("admins getting reports")

    def __str__(self) -> str:
        return str(self.user_id)


class BanList(models.Model):
    """A shared ban list (Rose's "federation"): a ban in one of its chats applies to all."""

    name = models.CharField(_("name"), max_length=64)
    owner_id = models.BigIntegerField(_("owner id"))
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("shared ban list")
        verbose_name_plural = _("shared ban lists")

    def __str__(self) -> str:
        return f"{self.name} (#{self.pk})"


class BanListChat(models.Model):
    """A chat in a shared ban list (a chat is in one list at most)."""

    ban_list = models.ForeignKey(BanList, on_delete=models.CASCADE, related_name="chats")
    chat_id = models.BigIntegerField(_("chat id"), unique=True)
    chat_title = models.CharField(_("chat"), max_length=200, blank=True)
    added_by = models.BigIntegerField(_("added by"), null=True, blank=True)
    added_at = models.DateTimeField(_("added"), auto_now_add=True)

    class Meta:
        verbose_name = _("chat of a shared ban list")
        verbose_name_plural = _("chats of shared ban lists")

    def __str__(self) -> str:
        return f"{self.chat_title or self.chat_id} in {self.ban_list_id}"


class SharedBan(models.Model):
    """A member banned (or unbanned again) in every chat of a list; ``generation`` counts the
    changes, so that a job of an older change does nothing."""

    ban_list = models.ForeignKey(BanList, on_delete=models.CASCADE, related_name="bans")
    user_id = models.BigIntegerField(_("user id"))
    name = models.CharField(_("name"), max_length=200, blank=True)
    reason = models.CharField(_("reason"), max_length=200, blank=True)
    active = models.BooleanField(_("banned"), default=True)
    generation = models.PositiveIntegerField(default=1, editable=False)
    changed_by = models.BigIntegerField(_("changed by"), null=True, blank=True)
    changed_at = models.DateTimeField(_("changed"), auto_now=True)

    class Meta:
        verbose_name = _("shared ban")
        verbose_name_plural = _("shared bans")
        constraints = [
            models.UniqueConstraint(fields=["ban_list", "user_id"], name="rules_shared_ban_once")
        ]

    def __str__(self) -> str:
        return f"{self.name or self.user_id} in list {self.ban_list_id}"


class SharedBanApplied(models.Model):
    """One chat's part of one change of a shared ban, carried out (recorded once)."""

    ban = models.ForeignKey(SharedBan, on_delete=models.CASCADE, related_name="applied")
    chat_id = models.BigIntegerField()
    generation = models.PositiveIntegerField()
    outcome = models.CharField(max_length=10)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["ban", "chat_id", "generation"], name="rules_shared_ban_applied_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.ban_id} in {self.chat_id} ({self.generation})"
