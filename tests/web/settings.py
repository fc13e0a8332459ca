"""The product's settings with ``tests/web/urls.py``: what ``test_web_worker.py``'s servers
run, for a view that ends its thread the way no product view does."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.web.urls"
