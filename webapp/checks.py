"""``manage.py check`` (and every start): the Mini App's address must be one this site serves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error


def public_url_served(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    url = settings.MINIAPP_PUBLIC_URL
    if not url:
        return []
    host = urlsplit(url).hostname or ""
    if _allowed(host, settings.ALLOWED_HOSTS):
        return []
    return [
        Error(
            f"MINIAPP_PUBLIC_URL's host {host!r} is not in DJANGO_ALLOWED_HOSTS: Telegram would "
            "open the Mini App on an address this site answers 400.",
            hint="Add the host to DJANGO_ALLOWED_HOSTS, or correct MINIAPP_PUBLIC_URL.",
            id="webapp.E001",
        )
    ]


def _allowed(host: str, patterns: list[str]) -> bool:
    """As ALLOWED_HOSTS reads its entries: ``*``, an exact name, or ``.example.org`` for the
    domain and its subdomains."""
    host = host.lower()
    for pattern in (p.lower() for p in patterns):
        if pattern == "*" or pattern == host:
            return True
        if pattern.startswith(".") and (host.endswith(pattern) or host == pattern[1:]):
            return True
    return False
