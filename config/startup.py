"""Turn a configuration error into one line on stderr and exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from config.env import ConfigError

T = TypeVar("T")


def run_or_exit(entry: Callable[[], T]) -> T:
    try:
        return entry()
    except ConfigError as exc:
        sys.stderr.write(f"configuration error: {exc}\n")
        raise SystemExit(2) from None
