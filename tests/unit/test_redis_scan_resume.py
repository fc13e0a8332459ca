"""Resuming a Redis SCAN batch that a page cut (one bucket's keys outnumbered the limit): after
the keys returned only when the batch's first keys are exactly those keys, by the digest of
their names the cursor carries; else from the batch's start (a key may come twice, never not
at all).

The rule before resumed after the last key returned whenever that key stood where the page
left it. A rehash reverses a bucket's keys, so that key can stand in the same place with an
unreturned key before it (``test_redis_scan_resize`` walks a real server through resizes).
Earlier still, resuming after the last key by name skipped the keys that a shrunk table's
same SCAN call brought before it."""

from __future__ import annotations

from telegram_bot.state.redis import _counts, _digest, _returned

AB = _digest(["a", "b"])


def test_the_same_batch_resumes_after_the_keys_returned() -> None:
    assert _returned(["a", "b", "c", "d"], 2, AB)


def test_the_same_keys_in_another_order_resume_after_them() -> None:
    assert _returned(["b", "a", "c"], 2, AB)


def test_a_bucket_reversed_by_a_rehash_starts_again() -> None:
    # "b" is still second, but "c", never returned, now stands before it
    assert not _returned(["c", "b", "a"], 2, AB)


def test_a_batch_with_new_keys_before_the_last_key_starts_again() -> None:
    # "x" came into the batch before "b" (other buckets after a resize): it was never returned.
    assert not _returned(["x", "a", "b", "c"], 2, AB)


def test_a_batch_whose_returned_key_expired_starts_again() -> None:
    assert not _returned(["a", "c", "d"], 2, AB)
    assert not _returned(["a"], 2, AB)


def test_a_cursor_without_a_digest_starts_again() -> None:
    """A cut cursor of the version before has none."""
    assert not _returned(["a", "b", "c"], 2, None)


def test_the_digest_is_of_the_names_not_their_order() -> None:
    assert _digest(["b", "a"]) == AB != _digest(["a", "b", "c"])
    assert len(AB) == 16 and int(AB, 16) >= 0


def test_a_pages_first_call_tries_its_own_count_then_fewer_buckets_then_one() -> None:
    assert _counts(1000, 0, 0) == (1000, 1)
    assert _counts(5, 0, 0) == (10, 5, 1)


def test_a_later_call_asks_for_nine_tenths_of_the_room_at_the_rate_found() -> None:
    """Half the keys matched so far: 500 left of 1,000 asks COUNT 900 (about 450 matches),
    so that the batch rarely overflows the page (which would cost the call again)."""
    assert _counts(1000, 500, 1000) == (900,)
    assert _counts(1000, 50, 1000) == (1000,)  # a sparse family: never more than the first
    assert _counts(100, 99, 100) == (10,)
