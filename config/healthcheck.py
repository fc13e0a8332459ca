"""The image's HEALTHCHECK (``python -m config.healthcheck``): ``GET /healthz`` on the local
web server, exit 0 on 200.

It sends a ``Host`` the site accepts: the first name of ``DJANGO_ALLOWED_HOSTS``. A production
configuration allows the public name only, and Django refuses ``127.0.0.1`` there with 400,
logging a DisallowedHost error at every probe. Imports nothing of Django: it runs every 30 s.
"""

from __future__ import annotations

import os
import sys
import urllib.request

LOCAL = "127.0.0.1"


def probe_host(allowed: str) -> str:
    """The Host header to send: the first allowed name (``.example.org`` allows example.org),
    else the loopback address (no setting, or ``*``)."""
    for name in allowed.split(","):
        name = name.strip().lstrip(".")
        if name and name != "*":
            return name
    return LOCAL


def main() -> int:
    port = os.environ.get("PORT", "8000")
    host = probe_host(os.environ.get("DJANGO_ALLOWED_HOSTS", ""))
    request = urllib.request.Request(f"http://{LOCAL}:{port}/healthz", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=4) as response:  # noqa: S310 - a fixed http URL
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"healthz: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
