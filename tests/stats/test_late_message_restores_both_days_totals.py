"""A late message to day D drops the stored totals of D and D + 1; the reconciliation stores
both again (it stored D's only). The test failed on the code before."""

from __future__ import annotations

from typing import Any

import pytest


# --- (9) a late add to day D drops D + 1's totals for good --------------------------------------
@pytest.mark.parametrize("kv", ["memory"], indirect=True)
def test_the_next_days_totals_come_back_after_a_late_message_is_reconciled(
    wired: Any, post_update: Any, admin_client: Any
) -> None:
    """A late message to D drops the stored totals of D and D + 1 (the triggers); the
    reconciliation verifies D and stores its totals again, but D + 1, verified and unchanged,
    stays without totals: its rows are summed on every read (exact, but the cost the totals
    exist to avoid) until someone runs ``manage.py stats_totals``. The schedules (the
    reconciliation, the backfill tick) never store them again; the analogous month sums have
    a schedule for exactly this, the day totals none."""
    from stats.backfill import backfill_run
    from stats.reconcile import reconcile_run
    from tests.stats.test_daily_totals import at, days, say, today, totals_of, verified_two_days

    before, yesterday = verified_two_days(post_update)
    # The setup's own messages were for closed days (late): the reconciliation retires them.
    reconcile_run(store=wired)
    assert totals_of(before) and totals_of(yesterday)
    say(post_update, 4, "late", at(before, 12))  # e.g. a dead letter replayed a day later
    assert totals_of(before) is None and totals_of(yesterday) is None
    assert reconcile_run(store=wired).outcome == "done"
    backfill_run(owner="tick")  # the schedule's tick, not forced
    assert totals_of(before) is not None  # D: stored again by the reconciliation
    # The figures stay exact meanwhile ...
    assert [d["messages"] for d in days(admin_client, before, yesterday)] == [3, 2]
    # ... but D + 1 is summed from its rows from now on.
    assert totals_of(yesterday) is not None, "D + 1's totals are never stored again"
    assert today() > yesterday
