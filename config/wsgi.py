"""WSGI entry point: ``gunicorn config.wsgi``."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from config.startup import load_environment, run_or_exit

load_environment()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = run_or_exit(get_wsgi_application)
