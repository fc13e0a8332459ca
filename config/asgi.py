"""ASGI entry point, for servers that prefer it; the product itself runs on WSGI."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from config.startup import load_environment, run_or_exit

load_environment()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = run_or_exit(get_asgi_application)
