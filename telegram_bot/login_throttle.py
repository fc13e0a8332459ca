"""Login throttling (django-axes, configured in settings): the client address it counts by.

Behind the TLS proxy every request comes from the proxy's address, so counting by
``REMOTE_ADDR`` would lock everyone out together. The proxy appends the address it saw to
``X-Forwarded-For``; with ``TRUSTED_PROXY_COUNT`` proxies in front, the client is that many
entries from the right. Entries further left are whatever the client sent and are ignored.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """The address failed logins are counted for (``AXES_CLIENT_IP_CALLABLE``)."""
    remote = request.META.get("REMOTE_ADDR")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    header = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    forwarded = [part.strip() for part in header.split(",") if part.strip()]
    if len(forwarded) < hops:
        return remote  # not through the expected proxies: count the direct peer
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote
