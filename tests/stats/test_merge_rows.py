"""``live_writer.merge_rows``: one row per (chat, day, member), deltas summed, sorted; a column
the aggregates do not have is refused, whether the message brought one row or several."""

from __future__ import annotations

from datetime import date

import pytest

from stats.live_writer import RowDelta, merge_rows

DAY = date(2026, 12, 1)


def test_rows_of_one_member_and_day_are_summed_and_sorted() -> None:
    rows = [
        RowDelta(-2, DAY, 7, {"message_count": 1, "word_count": 3}),
        RowDelta(-1, DAY, 9, {"message_count": 1}),
        RowDelta(-2, DAY, 7, {"message_count": 1, "voice_count": 1}),
    ]
    assert merge_rows(rows) == [
        RowDelta(-2, DAY, 7, {"message_count": 2, "word_count": 3, "voice_count": 1}),
        RowDelta(-1, DAY, 9, {"message_count": 1}),
    ]
    assert merge_rows(iter(rows)) == merge_rows(rows)  # any iterable


def test_a_single_row_is_kept_and_still_checked() -> None:
    row = RowDelta(-1, DAY, 7, {"message_count": 1, "hour_09": 1})
    assert merge_rows([row]) == [row]
    assert merge_rows([RowDelta(-1, DAY, 7, {})]) == []
    with pytest.raises(ValueError, match="unknown stats column 'bogus'"):
        merge_rows([RowDelta(-1, DAY, 7, {"message_count": 1, "bogus": 1})])
    with pytest.raises(ValueError, match="unknown stats column 'bogus'"):
        merge_rows([row, RowDelta(-1, DAY, 8, {"bogus": 1})])
