"""Per-chat join-request policy. Join requests themselves are not stored here (see records.py):
Telegram's pending state is the source of truth and the bot keeps only what deciding needs."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from telegram_bot.client import TEXT_LIMIT

# Telegram lets the bot write to a requester's user_chat_id for 5 minutes after the request:
# the question must be asked, and answered, inside that window.
MIN_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 300
MAX_MESSAGE_LENGTH = TEXT_LIMIT  # what one sendMessage carries
# A first name and a last name are at most 64 characters each in Telegram.
LONGEST_NAME = "x" * 129
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class ChatPolicy(models.Model):
    """How join requests to one chat are decided, and the welcome after an approval."""

    class Mode(models.TextChoices):
        MANUAL = "manual", gettext_lazy("Manual: the admins decide")
        AUTO_APPROVE = "auto_approve", gettext_lazy("Approve automatically")
        QUESTION = "question", gettext_lazy("Ask the requester a question")

    class Fallback(models.TextChoices):
        DECLINE = "decline", gettext_lazy("Decline the request")
        ADMINS = "admins", gettext_lazy("Leave it to the admins")

    chat_id = models.BigIntegerField(
        gettext_lazy("chat id"),
        unique=True,
        help_text=gettext_lazy("The group or channel id, negative (for example -1001234567890)."),
    )
    title = models.CharField(
        gettext_lazy("title"),
        max_length=128,
        blank=True,
        help_text=gettext_lazy("A label for operators."),
    )
    mode = models.CharField(
        gettext_lazy("mode"), max_length=20, choices=Mode.choices, default=Mode.MANUAL
    )
    question = models.TextField(
        gettext_lazy("question"),
        blank=True,
        max_length=1000,
        help_text=gettext_lazy("Sent to the requester in a private message."),
    )
    answers = models.TextField(
        gettext_lazy("accepted answers"),
        blank=True,
        max_length=2000,
        help_text=gettext_lazy(
            "Accepted answers, one per line. Case, spacing and final punctuation are ignored."
        ),
    )
    timeout_seconds = models.PositiveIntegerField(
        gettext_lazy("time to answer (seconds)"),
        default=180,
        validators=[MinValueValidator(MIN_TIMEOUT_SECONDS), MaxValueValidator(MAX_TIMEOUT_SECONDS)],
        help_text=format_lazy(
            gettext_lazy(
                "Time to answer, {least}-{most} seconds (Telegram allows the private message "
                "for 5 minutes after the request)."
            ),
            least=MIN_TIMEOUT_SECONDS,
            most=MAX_TIMEOUT_SECONDS,
        ),
    )
    on_timeout = models.CharField(
        gettext_lazy("on timeout"),
        max_length=10,
        choices=Fallback.choices,
        default=Fallback.DECLINE,
        help_text=gettext_lazy("When no answer arrives in time."),
    )
    on_wrong_answer = models.CharField(
        gettext_lazy("on a wrong answer"),
        max_length=10,
        choices=Fallback.choices,
        default=Fallback.ADMINS,
        help_text=gettext_lazy("When the answer is not one of the accepted answers."),
    )
    welcome_enabled = models.BooleanField(gettext_lazy("welcome on"), default=False)
    welcome_text = models.TextField(
        gettext_lazy("welcome text"),
        blank=True,
        help_text=gettext_lazy(
            "Sent after an approval (in the group; privately for a channel). "
            "{name} is replaced by the member's name. Plain text."
        ),
    )
    updated_at = models.DateTimeField(gettext_lazy("updated"), auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("join-request policy")
        verbose_name_plural = gettext_lazy("join-request policies")
        ordering = ["chat_id"]

    def __str__(self) -> str:
        return f"{self.title or self.chat_id} ({self.get_mode_display()})"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.chat_id is not None and self.chat_id >= 0:
            errors["chat_id"] = _("Group and channel ids are negative.")
        if self.mode == self.Mode.QUESTION:
            if not self.question.strip():
                errors["question"] = _("A question is required when the requester is asked one.")
            if not accepted_answers(self.answers):
                errors["answers"] = _("At least one accepted answer is required.")
        if self.welcome_enabled and not self.welcome_text.strip():
            errors["welcome_text"] = _("Write the welcome text, or switch the welcome off.")
        elif self.welcome_text:
            problem = welcome_text_problem(self.welcome_text)
            if problem:
                errors["welcome_text"] = problem
        if errors:
            raise ValidationError(errors)

    def accepts(self, answer: str) -> bool:
        """True when ``answer`` matches one of the accepted answers (normalised)."""
        given = normalise_answer(answer)
        return bool(given) and given in accepted_answers(self.answers)

    def welcome_for(self, name: str) -> str | None:
        """The welcome text for ``name``, or None when the welcome is off."""
        if not self.welcome_enabled or not self.welcome_text.strip():
            return None
        return render_welcome(self.welcome_text, name=name)


def normalise_answer(text: str) -> str:
    """Case-insensitive, spacing-insensitive, without surrounding quotes or final punctuation."""
    collapsed = " ".join(text.split()).casefold()
    return collapsed.strip(" \"'«»“”.!?,;:")


def accepted_answers(answers: str) -> set[str]:
    return {normalise_answer(line) for line in answers.splitlines()} - {""}


def render_welcome(template: str, *, name: str) -> str:
    # Plain replacement, not str.format: the template is operator input and format() would let
    # it reach attributes ("{name.__class__}").
    return template.replace("{name}", name)[:MAX_MESSAGE_LENGTH]


def welcome_text_problem(template: str) -> str | None:
    unknown = sorted({p for p in _PLACEHOLDER.findall(template) if p != "{name}"})
    if unknown:
        return _("Unknown placeholder %(unknown)s: only {name} is supported.") % {
            "unknown": ", ".join(unknown)
        }
    if len(render_welcome_unbounded(template)) > MAX_MESSAGE_LENGTH:
        return _(
            "The welcome must fit in %(limit)d characters with the longest possible name in "
            "place of {name}."
        ) % {"limit": MAX_MESSAGE_LENGTH}
    return None


def render_welcome_unbounded(template: str) -> str:
    return template.replace("{name}", LONGEST_NAME)


# --- members: welcome, rules, captcha, anti-raid (community/services/members.py) -------------
MEMBER_PLACEHOLDERS = ("{first_name}", "{mention}", "{chat_title}", "{rules}")
GOODBYE_PLACEHOLDERS = ("{first_name}", "{mention}", "{chat_title}")
# The longest value each placeholder can take, as the member reads it (Telegram: a first name
# is at most 64 characters, first + last name 129, a chat title 128).
_LONGEST = {"{first_name}": 64, "{mention}": 129, "{chat_title}": 128}
MAX_BUTTONS = 8
BUTTON_TEXT_LIMIT = 64
_BUTTON_URL = re.compile(r"^(https://|http://|tg://)[^\s]{1,2000}$")
MIN_CAPTCHA_SECONDS = 30
MAX_CAPTCHA_SECONDS = 600


class MemberPolicy(models.Model):
    """What happens when someone joins or leaves one group: welcome, goodbye, rules, captcha,
    anti-raid. A chat without a policy gets none of them."""

    chat_id = models.BigIntegerField(
        gettext_lazy("chat id"),
        unique=True,
        help_text=gettext_lazy("The group id, negative (for example -1001234567890)."),
    )
    title = models.CharField(
        gettext_lazy("title"),
        max_length=128,
        blank=True,
        help_text=gettext_lazy("A label for operators."),
    )
    welcome_enabled = models.BooleanField(gettext_lazy("welcome on"), default=False)
    welcome_text = models.TextField(
        gettext_lazy("welcome text"),
        blank=True,
        help_text=gettext_lazy(
            "Plain text. Placeholders: {first_name}, {mention} (a link to the member), "
            "{chat_title}, {rules}."
        ),
    )
    welcome_buttons = models.TextField(
        gettext_lazy("welcome buttons"),
        blank=True,
        help_text=format_lazy(
            gettext_lazy(
                'Optional link buttons under the welcome, one per line: "Label | https://...". '
                "At most {count}."
            ),
            count=MAX_BUTTONS,
        ),
    )
    delete_previous_welcome = models.BooleanField(
        gettext_lazy("delete the previous welcome"),
        default=False,
        help_text=gettext_lazy("Delete the previous welcome when a new one is posted."),
    )
    goodbye_enabled = models.BooleanField(gettext_lazy("goodbye on"), default=False)
    goodbye_text = models.TextField(
        gettext_lazy("goodbye text"),
        blank=True,
        help_text=gettext_lazy("Plain text. Placeholders: {first_name}, {mention}, {chat_title}."),
    )
    rules_text = models.TextField(
        gettext_lazy("rules"),
        blank=True,
        max_length=MAX_MESSAGE_LENGTH,
        help_text=gettext_lazy("Answered to /rules; plain text."),
    )
    clean_service_messages = models.BooleanField(
        gettext_lazy("clean service messages"),
        default=False,
        help_text=gettext_lazy('Delete Telegram\'s "X joined" / "X left" messages.'),
    )
    captcha_enabled = models.BooleanField(
        gettext_lazy("captcha on"),
        default=False,
        help_text=gettext_lazy(
            "New members cannot write until they press the right button (public groups)."
        ),
    )
    captcha_seconds = models.PositiveIntegerField(
        gettext_lazy("captcha time (seconds)"),
        default=120,
        validators=[MinValueValidator(MIN_CAPTCHA_SECONDS), MaxValueValidator(MAX_CAPTCHA_SECONDS)],
        help_text=format_lazy(
            gettext_lazy(
                "Time to answer, {least}-{most} seconds; no answer removes the member (they "
                "may join again)."
            ),
            least=MIN_CAPTCHA_SECONDS,
            most=MAX_CAPTCHA_SECONDS,
        ),
    )
    raid_joins = models.PositiveIntegerField(
        gettext_lazy("anti-raid threshold (joins)"),
        default=10,
        validators=[MaxValueValidator(10_000)],
        help_text=gettext_lazy(
            "Anti-raid: more joins than this within the window turns the strict mode on (0: off)."
        ),
    )
    raid_window_seconds = models.PositiveIntegerField(
        gettext_lazy("anti-raid window (seconds)"),
        default=60,
        validators=[MinValueValidator(5), MaxValueValidator(3600)],
    )
    raid_strict_minutes = models.PositiveIntegerField(
        gettext_lazy("strict mode (minutes)"),
        default=15,
        validators=[MinValueValidator(1), MaxValueValidator(24 * 60)],
        help_text=gettext_lazy("How long the strict mode lasts."),
    )

    class RaidMode(models.TextChoices):
        CAPTCHA = "captcha", gettext_lazy("Captcha for every new member")
        REQUESTS = "requests", gettext_lazy("Join requests only")

    class SpamAction(models.TextChoices):
        BAN = "ban", gettext_lazy("Ban them")
        KICK = "kick", gettext_lazy("Remove them (they may ask again)")
        OFF = "off", gettext_lazy("Let them in")

    raid_mode = models.CharField(
        gettext_lazy("strict mode"),
        max_length=10,
        choices=RaidMode.choices,
        default=RaidMode.CAPTCHA,
        help_text=gettext_lazy(
            "What the strict mode does. Join requests only: the bot creates an invite "
            "link that asks to join (it needs the right to invite users), removes members who "
            "join another way (ban, then unban) and points the chat to the link; the link is "
            "revoked when the strict mode ends. Telegram's Bot API cannot switch a group itself "
            'to "approve new members".'
        ),
    )
    spam_action = models.CharField(
        gettext_lazy("spam-listed joiners"),
        max_length=5,
        choices=SpamAction.choices,
        default=SpamAction.BAN,
        help_text=gettext_lazy(
            "What happens to a new member found on a spam list: the local list "
            "(manage.py import_spamlist) and, when SPAMCHECK_URL is set, the spam-check "
            "service. Approved members are not checked."
        ),
    )
    updated_at = models.DateTimeField(gettext_lazy("updated"), auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("member policy")
        verbose_name_plural = gettext_lazy("member policies")
        ordering = ["chat_id"]

    def __str__(self) -> str:
        return str(self.title or self.chat_id)

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.chat_id is not None and self.chat_id >= 0:
            errors["chat_id"] = _("Group ids are negative.")
        rules_length = len(self.rules_text)
        checks = (
            ("welcome", self.welcome_enabled, self.welcome_text, MEMBER_PLACEHOLDERS),
            ("goodbye", self.goodbye_enabled, self.goodbye_text, GOODBYE_PLACEHOLDERS),
        )
        for name, enabled, text, allowed in checks:
            if enabled and not text.strip():
                errors[f"{name}_text"] = (
                    _("Write the welcome text, or switch the welcome off.")
                    if name == "welcome"
                    else _("Write the goodbye text, or switch the goodbye off.")
                )
            elif text:
                problem = member_text_problem(text, allowed, rules_length=rules_length)
                if problem:
                    errors[f"{name}_text"] = problem
        try:
            parse_buttons(self.welcome_buttons)
        except ValueError as exc:
            errors["welcome_buttons"] = str(exc)
        if errors:
            raise ValidationError(errors)


def member_text_problem(text: str, allowed: tuple[str, ...], *, rules_length: int) -> str | None:
    """Why ``text`` cannot be sent as a welcome or goodbye, or None. The length is checked with
    the longest value of every placeholder, as Telegram counts it (the visible text)."""
    unknown = sorted({p for p in _PLACEHOLDER.findall(text) if p not in allowed})
    if unknown:
        return _("Unknown placeholder %(unknown)s: use %(allowed)s.") % {
            "unknown": ", ".join(unknown),
            "allowed": ", ".join(allowed),
        }
    longest = dict(_LONGEST, **{"{rules}": rules_length})
    length = len(text)
    for placeholder in allowed:
        length += text.count(placeholder) * (longest[placeholder] - len(placeholder))
    if length > MAX_MESSAGE_LENGTH:
        return _(
            "The text must fit in %(limit)d characters with the longest possible values in "
            "place of the placeholders (it could reach %(length)d)."
        ) % {"limit": MAX_MESSAGE_LENGTH, "length": length}
    return None


def parse_buttons(text: str) -> list[tuple[str, str]]:
    """``[(label, url)]`` from "Label | URL" lines; ValueError names the first bad line."""
    buttons = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label, sep, url = (part.strip() for part in line.partition("|"))
        if not sep or not label or not url:
            raise ValueError(_('Line %(line)d: write "Label | https://...".') % {"line": number})
        if len(label) > BUTTON_TEXT_LIMIT:
            raise ValueError(
                _("Line %(line)d: a label is at most %(limit)d characters.")
                % {"line": number, "limit": BUTTON_TEXT_LIMIT}
            )
        if not _BUTTON_URL.match(url):
            raise ValueError(
                _("Line %(line)d: the link must start with https://, http:// or tg://")
                % {"line": number}
            )
        buttons.append((label, url))
    if len(buttons) > MAX_BUTTONS:
        raise ValueError(_("At most %(count)d buttons.") % {"count": MAX_BUTTONS})
    return buttons


class BotChat(models.Model):
    """A group or channel the bot is (or was) in, from ``my_chat_member`` (bot_chats.py)."""

    chat_id = models.BigIntegerField(gettext_lazy("chat id"), unique=True)
    title = models.CharField(gettext_lazy("title"), max_length=128, blank=True)
    chat_type = models.CharField(gettext_lazy("chat type"), max_length=20)
    status = models.CharField(
        gettext_lazy("status"),
        max_length=20,
        help_text=gettext_lazy("The bot's status: member, administrator..."),
    )
    is_member = models.BooleanField(
        gettext_lazy("the bot is in"),
        default=False,
        help_text=gettext_lazy("The bot is in the chat."),
    )
    rights = models.JSONField(
        gettext_lazy("rights"),
        default=dict,
        help_text=gettext_lazy("The administrator rights it has."),
    )
    event_date = models.BigIntegerField(
        gettext_lazy("event date"),
        default=0,
        help_text=gettext_lazy("Telegram's date of the last change."),
    )
    updated_at = models.DateTimeField(gettext_lazy("updated"), auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("chat of the bot")
        verbose_name_plural = gettext_lazy("chats of the bot")
        ordering = ["-is_member", "chat_id"]

    def __str__(self) -> str:
        return f"{self.title or self.chat_id} ({self.status})"


class MemberMovement(models.Model):
    """One join or one leave of one stay of a member (community/growth.py): unique per stay
    and kind, so a join seen twice (chat_member and the service message, or a re-delivery)
    is one row."""

    class Kind(models.TextChoices):
        JOIN = "join", gettext_lazy("Join")
        LEAVE = "leave", gettext_lazy("Leave")

    chat_id = models.BigIntegerField(gettext_lazy("chat id"))
    user_id = models.BigIntegerField(gettext_lazy("user id"))
    stay = models.CharField(
        gettext_lazy("stay"),
        max_length=16,
        help_text=gettext_lazy("The stay's id in the KV store."),
    )
    kind = models.CharField(gettext_lazy("kind"), max_length=5, choices=Kind.choices)
    at = models.DateTimeField(
        gettext_lazy("time"), help_text=gettext_lazy("Telegram's date of the event.")
    )
    day = models.DateField(gettext_lazy("day"), help_text=gettext_lazy("The UTC day of the time."))

    class Meta:
        verbose_name = gettext_lazy("member movement")
        verbose_name_plural = gettext_lazy("member movements")
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "stay", "kind"], name="member_movement_once")
        ]
        indexes = [models.Index(fields=["chat_id", "day"], name="member_movement_day")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.user_id} in {self.chat_id} on {self.day}"


class MemberCount(models.Model):
    """The member count of a chat on a UTC day (getChatMemberCount, once a day)."""

    chat_id = models.BigIntegerField(gettext_lazy("chat id"))
    day = models.DateField(gettext_lazy("day"))
    count = models.PositiveIntegerField(gettext_lazy("members"))
    fetched_at = models.DateTimeField(gettext_lazy("fetched"), auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("member count")
        verbose_name_plural = gettext_lazy("member counts")
        constraints = [
            models.UniqueConstraint(fields=["chat_id", "day"], name="member_count_once_a_day")
        ]

    def __str__(self) -> str:
        return f"{self.count} members in {self.chat_id} on {self.day}"


class SpamListEntry(models.Model):
    """A Telegram account known to spam, from a file an operator imported
    (``manage.py import_spamlist``). Joiners on it get their chat's ``spam_action``."""

    user_id = models.BigIntegerField(gettext_lazy("user id"), unique=True)
    source = models.CharField(
        gettext_lazy("source"),
        max_length=40,
        help_text=gettext_lazy("The list it came from, named at import."),
    )
    reason = models.CharField(gettext_lazy("reason"), max_length=200, blank=True)
    added_at = models.DateTimeField(gettext_lazy("added"), auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("spam-listed account")
        verbose_name_plural = gettext_lazy("spam-listed accounts")
        indexes = [models.Index(fields=["source"], name="spam_list_source")]

    def __str__(self) -> str:
        return f"{self.user_id} ({self.source})"
