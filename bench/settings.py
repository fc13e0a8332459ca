"""The product's settings with the benchmark's baseline endpoints added to its URLs, so that the
product and its baselines are served by the same server, middleware and process model."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.serve_urls"
