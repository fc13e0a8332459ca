"""Fault injection shared by the tests: a function that fails once, then works."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError


def fail_once_in(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    name: str,
    error: Exception | None = None,
) -> list[int]:
    """Make ``module.<name>`` raise ``error`` (by default a database error) the first time it
    is called, and run the real one after that; return the list of calls made so far."""
    original = getattr(module, name)
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise error or OperationalError("server closed the connection unexpectedly")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, flaky)
    return calls
