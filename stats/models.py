"""Tables of the stats app.

``stats_daily_user`` holds the daily aggregates per (chat, day UTC, user): the live writer adds
to them, the backfill overwrites them with absolute values read from the KV counters (never
lowering a cell), both under the day's lock (``stats.daylock``).
``stats_daily_coverage`` says, per (chat, day, category), how far those numbers can be trusted.
``stats_backfill_state`` is the singleton job's state and lease. Raw SQL in ``live_writer`` and
``backfill.sql`` writes the first two tables, so every column has a database default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.db.models.functions import Now
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

CATEGORIES = ("messages", "words", "media", "profanity", "violations", "hours")
SEVERITIES = ("low", "medium", "high")


def _count(verbose_name: StrOrPromise) -> models.BigIntegerField:
    return models.BigIntegerField(verbose_name, default=0, db_default=0)


def _hour_name(hour: int) -> StrOrPromise:
    return format_lazy(_("messages at {hour}:00 UTC"), hour=f"{hour:02d}")


def _hour(hour: int) -> models.IntegerField:
    return models.IntegerField(_hour_name(hour), default=0, db_default=0)


class DailyUserStat(models.Model):
    chat_id = models.BigIntegerField(_("chat id"))
    day = models.DateField(_("day"))
    user_id = models.BigIntegerField(_("user id"))
    message_count = _count(_("messages"))
    word_count = _count(_("word count"))
    voice_count = _count(_("voice messages"))
    voice_seconds = _count(_("voice seconds"))
    video_note_count = _count(_("video notes"))
    video_note_seconds = _count(_("video note seconds"))
    profanity_count = _count(_("profanity"))
    violations_low = _count(_("low violations"))
    violations_medium = _count(_("medium violations"))
    violations_high = _count(_("high violations"))
    hour_00 = _hour(0)
    hour_01 = _hour(1)
    hour_02 = _hour(2)
    hour_03 = _hour(3)
    hour_04 = _hour(4)
    hour_05 = _hour(5)
    hour_06 = _hour(6)
    hour_07 = _hour(7)
    hour_08 = _hour(8)
    hour_09 = _hour(9)
    hour_10 = _hour(10)
    hour_11 = _hour(11)
    hour_12 = _hour(12)
    hour_13 = _hour(13)
    hour_14 = _hour(14)
    hour_15 = _hour(15)
    hour_16 = _hour(16)
    hour_17 = _hour(17)
    hour_18 = _hour(18)
    hour_19 = _hour(19)
    hour_20 = _hour(20)
    hour_21 = _hour(21)
    hour_22 = _hour(22)
    hour_23 = _hour(23)
    updated_at = models.DateTimeField(_("updated"), db_default=Now())

    class Meta:
        db_table = "stats_daily_user"
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "day", "user_id"], name="stats_daily_user_chat_day_user"
            )
        ]
        # The admin overview reads recent days across every chat (stats/overview.py).
        indexes = [models.Index(fields=["day", "user_id"], name="stats_daily_user_day_user")]
        verbose_name = _("daily user aggregate")
        verbose_name_plural = _("daily user aggregates")

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day} {self.user_id}: {self.message_count}"

    def hours(self) -> list[int]:
        return [getattr(self, f"hour_{hour:02d}") for hour in range(24)]


class DailyTotals(models.Model):
    """The sums of one stored (UTC) day of a chat, as the read path would compute them from
    ``stats_daily_user`` for the chat's time zone ``zone`` (``stats.aggregates.StoredDay``),
    written when finalize or the reconciliation verify the day complete.

    A row always equals its day's rows: triggers on ``stats_daily_user`` (migration 0005)
    delete the totals of (chat, day) and (chat, day + 1) on any insert, update or delete of a
    row of ``day`` before the database's today (UTC), so a late live add, a backfill rewrite
    or an erasure drops it. Today's rows (the live path) fire nothing, and no totals exist
    for today (the write checks the database's own clock). ``straddlers``: members with
    messages both in the last part of ``day - 1`` and the first part of ``day`` (one local
    day, counted once). Used only when ``zone`` and ``cut`` are the chat's current ones.
    """

    chat_id = models.BigIntegerField(_("chat id"))
    day = models.DateField(_("day"))
    zone = models.CharField(_("time zone"), max_length=64)
    cut = models.SmallIntegerField(_("first hour of the next local day"))
    messages = _count(_("messages"))
    words = _count(_("word count"))
    active = _count(_("active members"))
    tail_messages = _count(_("messages of the next local day"))
    head_words = _count(_("words of the first local day"))
    head_active = _count(_("active members of the first local day"))
    tail_active = _count(_("active members of the next local day"))
    straddlers = _count(_("members active on both sides of midnight"))
    hour_00 = _count(_hour_name(0))
    hour_01 = _count(_hour_name(1))
    hour_02 = _count(_hour_name(2))
    hour_03 = _count(_hour_name(3))
    hour_04 = _count(_hour_name(4))
    hour_05 = _count(_hour_name(5))
    hour_06 = _count(_hour_name(6))
    hour_07 = _count(_hour_name(7))
    hour_08 = _count(_hour_name(8))
    hour_09 = _count(_hour_name(9))
    hour_10 = _count(_hour_name(10))
    hour_11 = _count(_hour_name(11))
    hour_12 = _count(_hour_name(12))
    hour_13 = _count(_hour_name(13))
    hour_14 = _count(_hour_name(14))
    hour_15 = _count(_hour_name(15))
    hour_16 = _count(_hour_name(16))
    hour_17 = _count(_hour_name(17))
    hour_18 = _count(_hour_name(18))
    hour_19 = _count(_hour_name(19))
    hour_20 = _count(_hour_name(20))
    hour_21 = _count(_hour_name(21))
    hour_22 = _count(_hour_name(22))
    hour_23 = _count(_hour_name(23))
    verified_at = models.DateTimeField(_("verified at"), db_default=Now())

    class Meta:
        db_table = "stats_daily_totals"
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "day"], name="stats_daily_totals_chat_day")
        ]
        verbose_name = _("daily totals")
        verbose_name_plural = _("daily totals")

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day}: {self.messages}"


class MemberMonth(models.Model):
    """One member's sums of the stored (UTC) days of one closed calendar month of a chat: the
    sums of their ``stats_daily_user`` rows of that month (``stats.member_months``), read by
    the member ranking instead of the month's rows when the whole month is in the range.

    Written only for a month whose every day is before the database's today (UTC), under the
    exclusive lock of every day of the month (``stats.daylock``). A chat-month's rows always
    equal the rows they were summed from: triggers on ``stats_daily_user`` (migration 0008)
    delete every row of (chat, month) on any insert, update or delete of a row of a day of a
    closed month (a late live add, a backfill rewrite, an erasure moving rows to an anonymous
    id). ``last_day``: the member's last stored day of the month (any row, as the ranking's
    ``MAX(day)``).
    """

    chat_id = models.BigIntegerField(_("chat id"))
    month = models.DateField(_("month"))
    user_id = models.BigIntegerField(_("user id"))
    message_count = _count(_("messages"))
    word_count = _count(_("word count"))
    voice_count = _count(_("voice messages"))
    voice_seconds = _count(_("voice seconds"))
    video_note_count = _count(_("video notes"))
    video_note_seconds = _count(_("video note seconds"))
    profanity_count = _count(_("profanity"))
    violations_low = _count(_("low violations"))
    violations_medium = _count(_("medium violations"))
    violations_high = _count(_("high violations"))
    last_day = models.DateField(_("last stored day"))
    days = models.IntegerField(_("stored days"), default=0, db_default=0)

    class Meta:
        db_table = "stats_member_months"
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "month", "user_id"], name="stats_member_months_chat_month_user"
            )
        ]
        verbose_name = _("member's monthly totals")
        verbose_name_plural = _("members' monthly totals")

    def __str__(self) -> str:
        return f"{self.chat_id} {self.month} {self.user_id}: {self.message_count}"


class CoverageStatus(models.TextChoices):
    # the live writer has not touched this category of the day yet
    NONE = "none", _("none")
    # written by the backfill, not verified by finalize yet
    PENDING = "pending", _("pending")
    # written by the live writer (monotonic: the backfill never lowers it)
    LIVE = "live", _("live")
    # finalize verified the day: read it from the database
    COMPLETE = "complete", _("complete")


class CoverageSource(models.TextChoices):
    BACKFILL = "backfill", _("backfill")
    LIVE = "live", _("live")


CATEGORY_LABELS = {
    "messages": _("messages"),
    "words": _("word count"),
    "media": _("media"),
    "profanity": _("profanity"),
    "violations": _("violations"),
    "hours": _("hours"),
}


class DailyCoverage(models.Model):
    """How far the aggregates of one (chat, day, category) can be trusted.

    ``poisoned_at`` (ms since the epoch): a live write of this category failed then; cleared only
    by finalize once a backfill phase that started after it (``rebuilt_at``, ms) rebuilt it.
    ``reason`` is finalize's verdict when it could not mark the day complete.
    """

    chat_id = models.BigIntegerField(_("chat id"))
    day = models.DateField(_("day"))
    category = models.CharField(
        _("category"), max_length=16, choices=[(c, CATEGORY_LABELS[c]) for c in CATEGORIES]
    )
    status = models.CharField(
        _("status"), max_length=10, choices=CoverageStatus.choices, default=CoverageStatus.NONE
    )
    source = models.CharField(
        _("source"), max_length=10, choices=CoverageSource.choices, default=CoverageSource.BACKFILL
    )
    reason = models.CharField(_("reason"), max_length=40, blank=True, default="", db_default="")
    poisoned_at = models.BigIntegerField(_("poisoned (ms)"), null=True, blank=True)
    rebuilt_at = models.BigIntegerField(_("rebuilt (ms)"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated"), db_default=Now())

    class Meta:
        db_table = "stats_daily_coverage"
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "day", "category"], name="stats_daily_coverage_chat_day_cat"
            )
        ]
        verbose_name = _("daily coverage")
        verbose_name_plural = _("daily coverage")

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day} {self.category}: {self.status}"

    @property
    def poisoned(self) -> bool:
        return self.poisoned_at is not None


class UnsettledCount(models.Model):
    """A counted message whose KV commit may or may not have applied (``stats.unsettled``):
    its KV store did not answer (a timeout after the commit was sent), so its add is not in
    ``stats_daily_user``; the reconciliation's next run settles the cells from the counters."""

    chat_id = models.BigIntegerField(_("chat id"))
    day = models.DateField(_("day"))
    user_id = models.BigIntegerField(_("user id"))
    columns = models.JSONField(_("columns"), default=list)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        db_table = "stats_unsettled"
        verbose_name = _("unsettled count")
        verbose_name_plural = _("unsettled counts")

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day} {self.user_id}"


class BackfillStatus(models.TextChoices):
    IDLE = "idle", _("idle")
    RUNNING = "running", _("running")
    DONE = "done", _("done")


class BackfillState(models.Model):
    """State and lease of the singleton backfill job (one row per job name).

    The lease (``lease_owner``, ``lease_expires_at``) is taken under ``select_for_update`` and
    renewed by every state write; ``revision`` grows with every take-over and reset, so a worker
    whose (owner, revision) no longer match has lost the lease and its fenced writes do nothing.
    """

    job_name = models.CharField(_("job name"), max_length=64, primary_key=True)
    version = models.IntegerField(_("version"), default=1)
    status = models.CharField(
        _("status"), max_length=10, choices=BackfillStatus.choices, default=BackfillStatus.IDLE
    )
    phase = models.CharField(_("phase"), max_length=20, blank=True, default="")
    phase_step = models.SmallIntegerField(_("phase step"), default=0)
    cursor = models.TextField(_("cursor"), blank=True, default="")  # "" = from the start
    # how many keys of the page are done (info)
    page_offset = models.IntegerField(_("page offset"), default=0)
    # Keys of the current page already done, on a store whose scan is not ordered (Redis):
    # a resumed page is re-read from ``cursor`` and these are skipped, by key, not position.
    page_done = models.JSONField(_("keys done in the page"), default=list, blank=True)
    cutoff_day = models.DateField(_("cutoff day"), null=True, blank=True)
    lease_owner = models.CharField(_("lease owner"), max_length=100, blank=True, default="")
    lease_expires_at = models.DateTimeField(_("lease expires"), null=True, blank=True)
    revision = models.BigIntegerField(_("revision"), default=0)
    run_started_at = models.DateTimeField(_("run started"), null=True, blank=True)
    phase_started_ms = models.BigIntegerField(_("phase started (ms)"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    keys_done = models.BigIntegerField(_("keys done"), default=0)
    slices_done = models.IntegerField(_("slices done"), default=0)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        db_table = "stats_backfill_state"
        verbose_name = _("backfill state")
        verbose_name_plural = _("backfill states")

    def __str__(self) -> str:
        return f"{self.job_name}: {self.status} {self.phase}"


class ChatUserProfile(models.Model):
    """Display names of members, hydrated by the backfill's base phase from ``last_message``."""

    chat_id = models.BigIntegerField(_("chat id"))
    user_id = models.BigIntegerField(_("user id"))
    display_name = models.CharField(
        _("display name"), max_length=200, blank=True, default="", db_default=""
    )
    username = models.CharField(_("username"), max_length=64, blank=True, default="", db_default="")
    updated_at = models.DateTimeField(_("updated"), db_default=Now())

    class Meta:
        db_table = "stats_chat_user_profile"
        verbose_name = _("member profile")
        verbose_name_plural = _("member profiles")
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="stats_profile_chat_user")
        ]

    def __str__(self) -> str:
        return f"{self.chat_id}/{self.user_id} {self.display_name}"


class StatsChat(models.Model):
    """Titles of the counted chats, hydrated by the backfill's base phase."""

    chat_id = models.BigIntegerField(_("chat id"), primary_key=True)
    title = models.CharField(_("title"), max_length=255, blank=True, default="", db_default="")
    chat_type = models.CharField(
        _("chat type"), max_length=20, blank=True, default="", db_default=""
    )
    updated_at = models.DateTimeField(_("updated"), db_default=Now())

    class Meta:
        db_table = "stats_chat"
        verbose_name = _("counted chat")
        verbose_name_plural = _("counted chats")

    def __str__(self) -> str:
        return self.title or str(self.chat_id)


class StatsSettings(models.Model):
    """Operator settings of the stats app: one row (pk 1), edited in the admin site."""

    store_message_text = models.BooleanField(
        _("store message text"),
        default=False,
        help_text=_("Keep message text in the 7-day message buffer (off: counts only)."),
    )
    profanity_enabled = models.BooleanField(
        _("count profanity"),
        default=True,
        help_text=_("Count profanity with the shipped English and Russian lists."),
    )
    extra_profanity = models.TextField(
        _("more profanity"),
        blank=True,
        default="",
        help_text=_("More words, one per line: 'word' exact, 'stem*' prefix, '*root*' anywhere."),
    )
    allowed_words = models.TextField(
        _("allowed words"),
        blank=True,
        default="",
        help_text=_("Words never counted as profanity, one per line."),
    )
    new_member_days = models.PositiveIntegerField(
        _("days a member is new"),
        default=3,
        help_text=_(
            "A member who joined (as seen by the bot) less than this many days ago is new."
        ),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        db_table = "stats_settings"
        verbose_name = verbose_name_plural = _("statistics settings")

    def __str__(self) -> str:
        return str(_("Statistics settings"))


class ViolationKind(models.TextChoices):
    BANNED_WORDS = "banned_words", _("Banned words")
    NEW_MEMBER_LINK = "new_member_link", _("Links from new members")


class Severity(models.TextChoices):
    LOW = "low", _("low")
    MEDIUM = "medium", _("medium")
    HIGH = "high", _("high")


class ViolationRule(models.Model):
    """A rule that counts a violation of ``severity`` (at most one per rule and message)."""

    name = models.CharField(_("name"), max_length=100)
    kind = models.CharField(_("kind"), max_length=20, choices=ViolationKind.choices)
    words = models.TextField(
        _("word list"),
        blank=True,
        default="",
        help_text=_("Banned words, one per line ('word', 'stem*', '*root*'); unused for links."),
    )
    severity = models.CharField(
        _("severity"), max_length=10, choices=Severity.choices, default=Severity.MEDIUM
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        db_table = "stats_violation_rule"
        verbose_name = _("violation rule")
        verbose_name_plural = _("violation rules")
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.severity})"
