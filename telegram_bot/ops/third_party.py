"""Third-party apps under the names the operators read in the admin index, through gettext:
django-axes names its app "Axes" in every language (its models are translated)."""

from __future__ import annotations

from axes.apps import AppConfig as AxesAppConfig
from django.utils.translation import gettext_lazy as _


class LoginAttemptsConfig(AxesAppConfig):
    """django-axes (login attempts and lockouts), named for the operators."""

    verbose_name = _("Login attempts")
