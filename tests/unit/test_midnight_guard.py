"""The suite's midnight guard: a run that would cross UTC midnight starts in the new day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tests.midnight import AFTER, WINDOW, seconds_to_wait


def test_a_run_far_from_midnight_does_not_wait() -> None:
    assert seconds_to_wait(datetime(2026, 12, 1, 12, 0, tzinfo=UTC)) == 0
    assert seconds_to_wait(datetime(2026, 12, 1, 23, 59, tzinfo=UTC) - WINDOW) == 0


def test_a_run_near_midnight_waits_until_just_after_it() -> None:
    now = datetime(2026, 12, 1, 23, 53, 20, tzinfo=UTC)  # CI's start that crossed midnight
    assert seconds_to_wait(now) == 400 + AFTER.total_seconds()
    assert (now + timedelta(seconds=seconds_to_wait(now))).date() == now.date() + timedelta(days=1)


def test_midnight_is_utc_whatever_the_clocks_zone() -> None:
    moscow = timezone(timedelta(hours=3))
    assert seconds_to_wait(datetime(2026, 12, 2, 2, 55, tzinfo=moscow)) == 300 + 2  # 23:55 UTC
    assert seconds_to_wait(datetime(2026, 12, 2, 23, 55, tzinfo=moscow)) == 0  # 20:55 UTC
