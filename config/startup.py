"""Process start: read ``.env``, and turn a configuration error into one line on stderr and
exit code 2."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from config.env import ConfigError, load_env_file

T = TypeVar("T")
DEFAULT_ENV_FILE = Path(__file__).resolve().parent.parent / ".env"
# Read by libraries that test whether the variable exists, not whether it is empty:
# prometheus-client would write its files into the current directory for an empty one.
PRESENCE_READ = ("PROMETHEUS_MULTIPROC_DIR",)


def load_environment() -> None:
    """Read ``.env`` (or ``ENV_FILE``) into ``os.environ``; every entry point calls this first.

    The test settings do not: the suite never depends on a developer's ``.env``.
    """
    run_or_exit(lambda: load_env_file(DEFAULT_ENV_FILE))
    for name in PRESENCE_READ:
        if not os.environ.get(name, "").strip():
            os.environ.pop(name, None)


def run_or_exit(entry: Callable[[], T]) -> T:
    try:
        return entry()
    except ConfigError as exc:
        sys.stderr.write(f"configuration error: {exc}\n")
        raise SystemExit(2) from None
