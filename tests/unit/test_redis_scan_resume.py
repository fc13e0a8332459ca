"""Resuming a Redis SCAN page inside a batch: after the last key returned only when the batch
is the one read before; else from the batch's start (a key may come twice, never not at all).

When many keys expire between two pages, Redis may shrink its table, and the same SCAN call
then also brings keys of other buckets, some before the last key returned: resuming after that
key by name skipped them (a contract test saw a live key missed under load)."""

from __future__ import annotations

from telegram_bot.state.redis import _resume_at


def test_the_same_batch_resumes_after_the_last_key() -> None:
    assert _resume_at(["a", "b", "c", "d"], 2, "b") == 2


def test_a_batch_with_new_keys_before_the_last_key_starts_again() -> None:
    # "x" came into the batch before "b" (other buckets after a resize): it was never returned.
    assert _resume_at(["x", "a", "b", "c"], 2, "b") == 0


def test_a_batch_whose_last_key_expired_starts_again() -> None:
    assert _resume_at(["a", "c", "d"], 2, "b") == 0


def test_a_batch_read_from_its_start_resumes_at_the_count() -> None:
    assert _resume_at(["a", "b", "c"], 2, None) == 2
