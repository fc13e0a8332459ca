"""Compare what the product stored or serves with a conversation's ground truth."""

from __future__ import annotations

from collections import Counter
from datetime import date
from typing import Any

from stats.models import DailyUserStat
from tests.stats.conversation import FIELDS, Truth

DB_FIELDS = {
    "message_count": "messages",
    "word_count": "words",
    "voice_count": "voice_count",
    "voice_seconds": "voice_seconds",
    "video_note_count": "video_notes",
    "video_note_seconds": "video_note_seconds",
    "profanity_count": "profanity",
    "violations_low": "violations_low",
    "violations_medium": "violations_medium",
    "violations_high": "violations_high",
    **{f"hour_{hour:02d}": f"hour_{hour:02d}" for hour in range(24)},
}
Rows = dict[tuple[int, date, int], dict[str, int]]


def db_rows(*, before: date | None = None, on: date | None = None) -> Rows:
    """``stats_daily_user`` as {(chat, day, user): {truth field: value}} without zeros."""
    query = DailyUserStat.objects.all()
    if before is not None:
        query = query.filter(day__lt=before)
    if on is not None:
        query = query.filter(day=on)
    rows: Rows = {}
    for row in query:
        values = {name: getattr(row, column) for column, name in DB_FIELDS.items()}
        rows[(row.chat_id, row.day, row.user_id)] = {k: v for k, v in values.items() if v}
    return rows


def truth_rows(truth: Truth, *, before: date | None = None, on: date | None = None) -> Rows:
    return {
        key: {k: v for k, v in counts.items() if v}
        for key, counts in truth.rows.items()
        if (before is None or key[1] < before) and (on is None or key[1] == on)
    }


def assert_rows(actual: Rows, expected: Rows) -> None:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    wrong = sorted(key for key in set(actual) & set(expected) if actual[key] != expected[key])
    details = [(key, actual[key], expected[key]) for key in wrong[:3]]
    assert not (missing or extra or wrong), (
        f"missing {missing[:5]}, extra {extra[:5]}, {len(wrong)} wrong: {details}"
    )


def assert_report_matches(body: dict[str, Any], truth: Truth, chat_id: int) -> None:
    """The API's /report for one chat equals the truth: per day, per member, per hour."""
    days = [date.fromisoformat(day["day"]) for day in body["days"]]
    assert [day["messages"] for day in body["days"]] == [
        sum(c["messages"] for c in truth.day_of(chat_id, day).values()) for day in days
    ]
    assert [day["words"] for day in body["days"]] == [
        sum(c["words"] for c in truth.day_of(chat_id, day).values()) for day in days
    ]
    members: dict[int, Counter[str]] = {}
    for day in days:
        for user_id, counts in truth.day_of(chat_id, day).items():
            members.setdefault(user_id, Counter()).update(counts)
    served = {
        member["user_id"]: {name: member[name] for name in FIELDS} for member in body["members"]
    }
    assert served == {
        user_id: {name: counts[name] for name in FIELDS} for user_id, counts in members.items()
    }
    for row in body["hours"]["days"]:
        day_truth = truth.day_of(chat_id, date.fromisoformat(row["day"])).values()
        expected = [sum(c[f"hour_{hour:02d}"] for c in day_truth) for hour in range(24)]
        assert row["hours"] == expected, row["day"]
