"""The Mini App's forms: the admin site's models with their own validation (``full_clean``),
a section's fields each."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from community.models import MemberPolicy
from moderation.models import Action, ChatSettings
from moderation.rules.kinds import KIND_CHOICES
from moderation.rules.models import RULE_ACTIONS

WELCOME_FIELDS = (
    "welcome_enabled",
    "welcome_text",
    "welcome_buttons",
    "delete_previous_welcome",
    "goodbye_enabled",
    "goodbye_text",
    "rules_text",
)
CAPTCHA_FIELDS = (
    "captcha_enabled",
    "captcha_seconds",
    "raid_joins",
    "raid_window_seconds",
    "raid_strict_minutes",
    "raid_mode",
)
MODERATION_FIELDS = (
    "warn_limit",
    "warn_action",
    "warn_action_seconds",
    "warn_expiry_days",
    "flood_action",
    "flood_messages",
    "flood_seconds",
    "flood_action_seconds",
    "violation_low",
    "violation_medium",
    "violation_high",
    "violation_action_seconds",
)


class WelcomeForm(forms.ModelForm):
    class Meta:
        model = MemberPolicy
        fields = WELCOME_FIELDS


class CaptchaForm(forms.ModelForm):
    class Meta:
        model = MemberPolicy
        fields = CAPTCHA_FIELDS


class CleaningForm(forms.ModelForm):
    class Meta:
        model = MemberPolicy
        fields = ("clean_service_messages",)


class ModerationForm(forms.ModelForm):
    class Meta:
        model = ChatSettings
        fields = MODERATION_FIELDS


class LockForm(forms.Form):
    kind = forms.ChoiceField(label=_("kind"), choices=KIND_CHOICES)
    action = forms.ChoiceField(label=_("action"), choices=RULE_ACTIONS, initial=Action.DELETE)


class BlocklistForm(forms.Form):
    pattern = forms.CharField(
        label=_("word or phrase"),
        max_length=100,  # BlocklistEntry.pattern
        strip=True,
    )
    action = forms.ChoiceField(label=_("action"), choices=RULE_ACTIONS, initial=Action.DELETE)


class MemberActionForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("warn", _("warn")), ("mute", _("mute")), ("ban", _("ban")), ("unban", _("unban"))]
    )
    reason = forms.CharField(label=_("reason"), max_length=300, required=False, strip=True)
    once = forms.RegexField(regex=r"^[A-Za-z0-9_-]{16,64}$", widget=forms.HiddenInput)


class NoteForm(forms.Form):
    name = forms.RegexField(
        label=_("name"),
        regex=r"^#?[\w-]{1,64}$",
        error_messages={"invalid": _("Letters, digits, - and _ (at most 64).")},
    )
    text = forms.CharField(
        label=_("text"),
        max_length=4096,
        widget=forms.Textarea,
        strip=True,
        help_text=_("Buttons as in /save: [label](buttonurl://https://example.org)."),
    )
    admin_only = forms.BooleanField(label=_("admins only"), required=False)


class FilterForm(forms.Form):
    keyword = forms.CharField(label=_("keyword or phrase"), max_length=100, strip=True)
    text = forms.CharField(label=_("answer"), max_length=4096, widget=forms.Textarea, strip=True)
