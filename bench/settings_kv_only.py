"""``bench.settings`` with group messages counted in the KV store only (``bench.kv_only``)."""

from bench.settings import *  # noqa: F403
from bench.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.kv_only.KvOnlyConfig"]
