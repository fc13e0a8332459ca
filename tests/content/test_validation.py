"""Telegram's limits and operator input, checked before anything is saved."""

from __future__ import annotations

import contextlib
import struct
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import given, settings
from hypothesis import strategies as st

from content import validation
from tests.content.conftest import png_bytes, png_upload

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_it_accepts_texts_up_to_telegrams_limits() -> None:
    validation.check_text("x" * 4096, has_photo=False)
    validation.check_text("x" * 1024, has_photo=True)
    validation.check_text("", has_photo=True)  # a photo needs no caption


@pytest.mark.parametrize(
    ("text", "has_photo", "problem"),
    [
        ("x" * 4097, False, "at most 4096"),
        ("x" * 1025, True, "at most 1024"),
        ("   ", False, "needs a text"),
    ],
)
def test_it_refuses_texts_outside_telegrams_limits(
    text: str, has_photo: bool, problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        validation.check_text(text, has_photo=has_photo)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("@news_channel", "@news_channel"),
        (" https://t.me/news_channel ", "@news_channel"),
        ("-1001234567890", "-1001234567890"),
    ],
)
def test_it_normalizes_channels(given: str, stored: str) -> None:
    assert validation.normalize_channel(given) == stored


@pytest.mark.parametrize(
    "given", ["news", "@abc", "@1news", "@news_", "12345", "-12345", "", "@a b"]
)
def test_it_refuses_what_is_not_a_channel(given: str) -> None:
    with pytest.raises(ValidationError, match="@username"):
        validation.normalize_channel(given)


def test_it_gives_telegram_the_chat_id_it_expects() -> None:
    assert validation.chat_id_param("-1001234567890") == -1001234567890
    assert validation.chat_id_param("@news_channel") == "@news_channel"


def test_it_parses_and_formats_button_rows() -> None:
    text = "Site | https://example.org && Chat | tg://resolve?domain=news\nDocs | http://x.io/a|b"
    rows = validation.parse_buttons(text)
    assert rows == [
        [
            {"text": "Site", "url": "https://example.org"},
            {"text": "Chat", "url": "tg://resolve?domain=news"},
        ],
        [{"text": "Docs", "url": "http://x.io/a|b"}],
    ]
    assert validation.parse_buttons(validation.format_buttons(rows)) == rows
    assert validation.reply_markup(rows) == {"inline_keyboard": rows}
    assert validation.reply_markup([]) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Just a label", "Label \\| https"),
        ("Bad | ftp://example.org", "not an http"),
        ("Bad | javascript:alert(1)", "not an http"),
        (" | https://example.org", "empty label"),
        (f"{'L' * 65} | https://example.org", "over 64"),
        ("\n".join(["A | https://a.io"] * 11), "At most 10 rows"),
        (" && ".join(["A | https://a.io"] * 9), "at most 8 buttons"),
    ],
)
def test_it_refuses_malformed_buttons(text: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        validation.parse_buttons(text)


def test_it_refuses_buttons_that_are_not_rows_of_text_and_url() -> None:
    with pytest.raises(ValidationError):
        validation.check_buttons([{"text": "a", "url": "https://a.io"}])
    with pytest.raises(ValidationError):
        validation.check_buttons([[{"text": "a", "url": "https://a.io", "extra": 1}]])


def test_it_parses_absolute_utc_times_and_relative_ones() -> None:
    assert validation.parse_publish_time("2026-12-01 18:00", now=NOW) == datetime(
        2026, 12, 1, 18, 0, tzinfo=UTC
    )
    assert validation.parse_publish_time("2026-12-01T18:00:30Z", now=NOW) == datetime(
        2026, 12, 1, 18, 0, 30, tzinfo=UTC
    )
    assert validation.parse_publish_time("+2h", now=NOW) == NOW + timedelta(hours=2)
    assert validation.parse_publish_time("+1h30m", now=NOW) == NOW + timedelta(minutes=90)
    assert validation.parse_publish_time("+1d", now=NOW) == NOW + timedelta(days=1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2026-05-31 18:00", "in the past"),
        ("+0m", "in the past"),
        ("tomorrow", "like 2026-12-01 18:00"),
        ("+", "like 2026-12-01 18:00"),
        ("2062-01-01 00:00", "more than a year"),
    ],
)
def test_it_refuses_past_and_unreadable_times(text: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        validation.parse_publish_time(text, now=NOW)


def test_it_refuses_naive_times() -> None:
    with pytest.raises(ValidationError, match="time zone"):
        validation.check_publish_at(datetime(2030, 1, 1), now=NOW)


def test_it_accepts_png_jpeg_and_webp_photos() -> None:
    validation.check_photo_file(png_upload())
    jpeg = b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    jpeg += b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 600, 800) + b"\x00" * 10
    validation.check_photo_file(SimpleUploadedFile("a.jpg", jpeg))
    webp = b"RIFF" + struct.pack("<I", 30) + b"WEBPVP8 " + b"\x00" * 22
    validation.check_photo_file(SimpleUploadedFile("a.webp", webp))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"GIF89a....", "JPEG, PNG or WebP"),
        (b"%PDF-1.4", "JPEG, PNG or WebP"),
        (png_bytes(9000, 2000), "add up to at most 10000"),
        (png_bytes(2100, 100), "20 times"),
    ],
)
def test_it_refuses_photos_telegram_would_refuse(data: bytes, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        validation.check_photo_file(SimpleUploadedFile("x.png", data))


def test_it_refuses_photos_over_10_mb() -> None:
    big = SimpleUploadedFile("big.png", png_bytes() + b"\x00" * (10 * 1024 * 1024))
    with pytest.raises(ValidationError, match="10 MB"):
        validation.check_photo_file(big)


# --- malformed input: a ValidationError, never a crash ----------------------------------------
@pytest.mark.parametrize(
    "text",
    ["+999999999d", "+99999999999999999999999m", "+999999d999999h999999m", "+1234567h"],
)
def test_huge_relative_times_are_refused_not_crashed(text: str) -> None:
    with pytest.raises(ValidationError):
        validation.parse_publish_time(text, now=NOW)


def test_a_long_text_is_refused_at_once() -> None:
    # The relative-time pattern used to backtrack in cubic time on "+", spaces, then junk.
    started = time.monotonic()
    with pytest.raises(ValidationError, match="like 2026-12-01 18:00"):
        validation.parse_publish_time("+" + " " * 4000 + "x", now=NOW)
    with pytest.raises(ValidationError):
        validation.parse_publish_time("+" + " " * 60 + "x", now=NOW)
    assert time.monotonic() - started < 1


def test_relative_times_still_allow_spaces() -> None:
    assert validation.parse_publish_time("+ 1d 2h 30min", now=NOW) == NOW + timedelta(
        days=1, hours=2, minutes=30
    )


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "data",
    [
        PNG_SIGNATURE + b"\x00\x00\x00\x0dIHDR",  # cut off after "IHDR"
        PNG_SIGNATURE + b"\x00\x00\x00\x0dIHDR\x00\x00\x02",
        png_bytes()[:23],
        PNG_SIGNATURE,
        b"\xff\xd8\xff\xe0\x00",  # a JPEG segment header cut short
        b"\xff\xd8\xff\xc0\x00\x11\x08\x02",  # a JPEG frame header cut short
        b"\xff\xd8\xff\xe0\x00\x40JFIF\x00",  # a JPEG segment longer than the file
    ],
)
def test_a_truncated_photo_is_refused_not_crashed(data: bytes) -> None:
    with pytest.raises(ValidationError, match="cut short"):
        validation.check_photo_file(SimpleUploadedFile("x.png", data))


_TIME_TEXTS = st.one_of(
    st.text(max_size=80),
    st.from_regex(r"\+ ?[0-9]{1,30} ?[dhm]( ?[0-9]{1,30} ?[hm])?", fullmatch=True),
    st.from_regex(
        r"[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}[ T][0-9]{1,2}:[0-9]{1,2}( ?UTC)?", fullmatch=True
    ),
)


@settings(max_examples=500, deadline=None)
@given(_TIME_TEXTS)
def test_any_text_gives_a_time_or_a_validation_error(text: str) -> None:
    try:
        when = validation.parse_publish_time(text, now=NOW)
    except ValidationError:
        return
    assert NOW < when <= NOW + timedelta(days=366)


_PREFIXES = [
    b"",
    b"\xff\xd8\xff",
    b"RIFF\x00\x00\x00\x00WEBP",
    PNG_SIGNATURE,
    PNG_SIGNATURE + b"\x00\x00\x00\x0dIHDR",
]
# JPEG-shaped data: SOI, then segments of a random marker and random bytes (lengths included).
_JPEG_SEGMENTS = st.lists(
    st.tuples(
        st.sampled_from([0xC0, 0xC2, 0xD8, 0xD0, 0xE0, 0xFE, 0xFF, 0x01, 0x00]),
        st.binary(max_size=12),
    ),
    max_size=6,
).map(lambda segments: b"\xff\xd8" + b"".join(b"\xff" + bytes([m]) + body for m, body in segments))
_PHOTO_BYTES = st.one_of(
    st.binary(),
    st.tuples(st.sampled_from(_PREFIXES), st.binary(max_size=40)).map(b"".join),
    _JPEG_SEGMENTS,
)


@settings(max_examples=500, deadline=None)
@given(_PHOTO_BYTES)
def test_any_bytes_give_a_photo_or_a_validation_error(data: bytes) -> None:
    with contextlib.suppress(ValidationError):  # anything else fails the test
        validation.check_photo_file(SimpleUploadedFile("x.jpg", data))
