"""Per-chat join-request policy. Join requests themselves are not stored here (see records.py):
Telegram's pending state is the source of truth and the bot keeps only what deciding needs."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

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
        MANUAL = "manual", "Manual: the admins decide"
        AUTO_APPROVE = "auto_approve", "Approve automatically"
        QUESTION = "question", "Ask the requester a question"

    class Fallback(models.TextChoices):
        DECLINE = "decline", "Decline the request"
        ADMINS = "admins", "Leave it to the admins"

    chat_id = models.BigIntegerField(
        unique=True, help_text="The group or channel id, negative (for example -1001234567890)."
    )
    title = models.CharField(max_length=128, blank=True, help_text="A label for operators.")
    mode = models.CharField(max_length=20, choices=Mode.choices, default=Mode.MANUAL)
    question = models.TextField(
        blank=True, max_length=1000, help_text="Sent to the requester in a private message."
    )
    answers = models.TextField(
        blank=True,
        max_length=2000,
        help_text="Accepted answers, one per line. Case, spacing and final punctuation are "
        "ignored.",
    )
    timeout_seconds = models.PositiveIntegerField(
        default=180,
        validators=[MinValueValidator(MIN_TIMEOUT_SECONDS), MaxValueValidator(MAX_TIMEOUT_SECONDS)],
        help_text=f"Time to answer, {MIN_TIMEOUT_SECONDS}-{MAX_TIMEOUT_SECONDS} seconds "
        "(Telegram allows the private message for 5 minutes after the request).",
    )
    on_timeout = models.CharField(
        max_length=10,
        choices=Fallback.choices,
        default=Fallback.DECLINE,
        help_text="When no answer arrives in time.",
    )
    on_wrong_answer = models.CharField(
        max_length=10,
        choices=Fallback.choices,
        default=Fallback.ADMINS,
        help_text="When the answer is not one of the accepted answers.",
    )
    welcome_enabled = models.BooleanField(default=False)
    welcome_text = models.TextField(
        blank=True,
        help_text="Sent after an approval (in the group; privately for a channel). "
        "{name} is replaced by the member's name. Plain text.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "join-request policy"
        verbose_name_plural = "join-request policies"
        ordering = ["chat_id"]

    def __str__(self) -> str:
        return f"{self.title or self.chat_id} ({self.get_mode_display()})"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.chat_id is not None and self.chat_id >= 0:
            errors["chat_id"] = "Group and channel ids are negative."
        if self.mode == self.Mode.QUESTION:
            if not self.question.strip():
                errors["question"] = "A question is required when the requester is asked one."
            if not accepted_answers(self.answers):
                errors["answers"] = "At least one accepted answer is required."
        if self.welcome_enabled and not self.welcome_text.strip():
            errors["welcome_text"] = "Write the welcome text, or switch the welcome off."
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
        return f"Unknown placeholder {', '.join(unknown)}: only {{name}} is supported."
    if len(render_welcome_unbounded(template)) > MAX_MESSAGE_LENGTH:
        return (
            f"The welcome must fit in {MAX_MESSAGE_LENGTH} characters with the longest "
            "possible name in place of {name}."
        )
    return None


def render_welcome_unbounded(template: str) -> str:
    return template.replace("{name}", LONGEST_NAME)
