"""Tables of the stats app.

``stats_daily_user`` holds the daily aggregates per (chat, day UTC, user): the live writer adds
to them, the backfill overwrites them with absolute values read from the KV counters (never
lowering a cell), both under the day's lock (``stats.daylock``).
``stats_daily_coverage`` says, per (chat, day, category), how far those numbers can be trusted.
``stats_backfill_state`` is the singleton job's state and lease. Raw SQL in ``live_writer`` and
``backfill.sql`` writes the first two tables, so every column has a database default.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

CATEGORIES = ("messages", "words", "media", "profanity", "violations", "hours")
SEVERITIES = ("low", "medium", "high")


def _count() -> models.BigIntegerField:
    return models.BigIntegerField(default=0, db_default=0)


def _hour() -> models.IntegerField:
    return models.IntegerField(default=0, db_default=0)


class DailyUserStat(models.Model):
    chat_id = models.BigIntegerField()
    day = models.DateField()
    user_id = models.BigIntegerField()
    message_count = _count()
    word_count = _count()
    voice_count = _count()
    voice_seconds = _count()
    video_note_count = _count()
    video_note_seconds = _count()
    profanity_count = _count()
    violations_low = _count()
    violations_medium = _count()
    violations_high = _count()
    hour_00 = _hour()
    hour_01 = _hour()
    hour_02 = _hour()
    hour_03 = _hour()
    hour_04 = _hour()
    hour_05 = _hour()
    hour_06 = _hour()
    hour_07 = _hour()
    hour_08 = _hour()
    hour_09 = _hour()
    hour_10 = _hour()
    hour_11 = _hour()
    hour_12 = _hour()
    hour_13 = _hour()
    hour_14 = _hour()
    hour_15 = _hour()
    hour_16 = _hour()
    hour_17 = _hour()
    hour_18 = _hour()
    hour_19 = _hour()
    hour_20 = _hour()
    hour_21 = _hour()
    hour_22 = _hour()
    hour_23 = _hour()
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "stats_daily_user"
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "day", "user_id"], name="stats_daily_user_chat_day_user"
            )
        ]
        # The admin overview reads recent days across every chat (stats/overview.py).
        indexes = [models.Index(fields=["day", "user_id"], name="stats_daily_user_day_user")]
        verbose_name = "daily user aggregate"

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

    chat_id = models.BigIntegerField()
    day = models.DateField()
    zone = models.CharField(max_length=64)
    cut = models.SmallIntegerField()
    messages = _count()
    words = _count()
    active = _count()
    tail_messages = _count()
    head_words = _count()
    head_active = _count()
    tail_active = _count()
    straddlers = _count()
    hour_00 = _count()
    hour_01 = _count()
    hour_02 = _count()
    hour_03 = _count()
    hour_04 = _count()
    hour_05 = _count()
    hour_06 = _count()
    hour_07 = _count()
    hour_08 = _count()
    hour_09 = _count()
    hour_10 = _count()
    hour_11 = _count()
    hour_12 = _count()
    hour_13 = _count()
    hour_14 = _count()
    hour_15 = _count()
    hour_16 = _count()
    hour_17 = _count()
    hour_18 = _count()
    hour_19 = _count()
    hour_20 = _count()
    hour_21 = _count()
    hour_22 = _count()
    hour_23 = _count()
    verified_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "stats_daily_totals"
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "day"], name="stats_daily_totals_chat_day")
        ]
        verbose_name_plural = "daily totals"

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day}: {self.messages}"


class CoverageStatus(models.TextChoices):
    NONE = "none"  # the live writer has not touched this category of the day yet
    PENDING = "pending"  # written by the backfill, not verified by finalize yet
    LIVE = "live"  # written by the live writer (monotonic: the backfill never lowers it)
    COMPLETE = "complete"  # finalize verified the day: read it from the database


class CoverageSource(models.TextChoices):
    BACKFILL = "backfill"
    LIVE = "live"


class DailyCoverage(models.Model):
    """How far the aggregates of one (chat, day, category) can be trusted.

    ``poisoned_at`` (ms since the epoch): a live write of this category failed then; cleared only
    by finalize once a backfill phase that started after it (``rebuilt_at``, ms) rebuilt it.
    ``reason`` is finalize's verdict when it could not mark the day complete.
    """

    chat_id = models.BigIntegerField()
    day = models.DateField()
    category = models.CharField(max_length=16, choices=[(c, c) for c in CATEGORIES])
    status = models.CharField(
        max_length=10, choices=CoverageStatus.choices, default=CoverageStatus.NONE
    )
    source = models.CharField(
        max_length=10, choices=CoverageSource.choices, default=CoverageSource.BACKFILL
    )
    reason = models.CharField(max_length=40, blank=True, default="", db_default="")
    poisoned_at = models.BigIntegerField(null=True, blank=True)
    rebuilt_at = models.BigIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "stats_daily_coverage"
        constraints = [
            models.UniqueConstraint(
                fields=["chat_id", "day", "category"], name="stats_daily_coverage_chat_day_cat"
            )
        ]
        verbose_name_plural = "daily coverage"

    def __str__(self) -> str:
        return f"{self.chat_id} {self.day} {self.category}: {self.status}"

    @property
    def poisoned(self) -> bool:
        return self.poisoned_at is not None


class BackfillStatus(models.TextChoices):
    IDLE = "idle"
    RUNNING = "running"
    DONE = "done"


class BackfillState(models.Model):
    """State and lease of the singleton backfill job (one row per job name).

    The lease (``lease_owner``, ``lease_expires_at``) is taken under ``select_for_update`` and
    renewed by every state write; ``revision`` grows with every take-over and reset, so a worker
    whose (owner, revision) no longer match has lost the lease and its fenced writes do nothing.
    """

    job_name = models.CharField(max_length=64, primary_key=True)
    version = models.IntegerField(default=1)
    status = models.CharField(
        max_length=10, choices=BackfillStatus.choices, default=BackfillStatus.IDLE
    )
    phase = models.CharField(max_length=20, blank=True, default="")
    phase_step = models.SmallIntegerField(default=0)
    cursor = models.TextField(blank=True, default="")  # "" = from the start
    page_offset = models.IntegerField(default=0)  # how many keys of the page are done (info)
    # Keys of the current page already done, on a store whose scan is not ordered (Redis):
    # a resumed page is re-read from ``cursor`` and these are skipped, by key, not position.
    page_done = models.JSONField(default=list, blank=True)
    cutoff_day = models.DateField(null=True, blank=True)
    lease_owner = models.CharField(max_length=100, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    revision = models.BigIntegerField(default=0)
    run_started_at = models.DateTimeField(null=True, blank=True)
    phase_started_ms = models.BigIntegerField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    keys_done = models.BigIntegerField(default=0)
    slices_done = models.IntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "stats_backfill_state"
        verbose_name = "backfill state"

    def __str__(self) -> str:
        return f"{self.job_name}: {self.status} {self.phase}"


class ChatUserProfile(models.Model):
    """Display names of members, hydrated by the backfill's base phase from ``last_message``."""

    chat_id = models.BigIntegerField()
    user_id = models.BigIntegerField()
    display_name = models.CharField(max_length=200, blank=True, default="", db_default="")
    username = models.CharField(max_length=64, blank=True, default="", db_default="")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "stats_chat_user_profile"
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "user_id"], name="stats_profile_chat_user")
        ]

    def __str__(self) -> str:
        return f"{self.chat_id}/{self.user_id} {self.display_name}"


class StatsChat(models.Model):
    """Titles of the counted chats, hydrated by the backfill's base phase."""

    chat_id = models.BigIntegerField(primary_key=True)
    title = models.CharField(max_length=255, blank=True, default="", db_default="")
    chat_type = models.CharField(max_length=20, blank=True, default="", db_default="")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "stats_chat"
        verbose_name = "counted chat"

    def __str__(self) -> str:
        return self.title or str(self.chat_id)


class StatsSettings(models.Model):
    """Operator settings of the stats app: one row (pk 1), edited in the admin site."""

    store_message_text = models.BooleanField(
        default=False,
        help_text="Keep message text in the 7-day message buffer (off: counts only).",
    )
    profanity_enabled = models.BooleanField(
        default=True, help_text="Count profanity with the shipped English and Russian lists."
    )
    extra_profanity = models.TextField(
        blank=True,
        default="",
        help_text="More words, one per line: 'word' exact, 'stem*' prefix, '*root*' anywhere.",
    )
    allowed_words = models.TextField(
        blank=True, default="", help_text="Words never counted as profanity, one per line."
    )
    new_member_days = models.PositiveIntegerField(
        default=3,
        help_text="A member who joined (as seen by the bot) less than this many days ago is new.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "stats_settings"
        verbose_name = verbose_name_plural = "statistics settings"

    def __str__(self) -> str:
        return "Statistics settings"


class ViolationKind(models.TextChoices):
    BANNED_WORDS = "banned_words", "Banned words"
    NEW_MEMBER_LINK = "new_member_link", "Links from new members"


class Severity(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class ViolationRule(models.Model):
    """A rule that counts a violation of ``severity`` (at most one per rule and message)."""

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=ViolationKind.choices)
    words = models.TextField(
        blank=True,
        default="",
        help_text="Banned words, one per line ('word', 'stem*', '*root*'); unused for links.",
    )
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.MEDIUM)
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "stats_violation_rule"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.severity})"
