"""The product's settings with ``tests/web/urls.py``: what the web server tests' servers run,
for views no product view is like (one that ends its thread, one that shows what a proxy
forwarded)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.web.urls"
