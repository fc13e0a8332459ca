from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from telegram_bot.redaction import REDACTED, TokenRedactingFilter, redact

TOKEN = "123456789:AAFakeTokenForTestsOnly_0123456789abcdef"
SECRET = TOKEN.split(":", 1)[1]
Captured = tuple[logging.Logger, io.StringIO]


@pytest.mark.parametrize(
    "text",
    [
        TOKEN,
        f"token={TOKEN}",
        f"POST https://api.telegram.org/bot{TOKEN}/sendMessage",
        f"https://example.com/hook?t={TOKEN.replace(':', '%3A')}",
        f"two: {TOKEN} and 987654321:{'x' * 35}",
    ],
)
def test_it_redacts_bot_tokens(text: str) -> None:
    cleaned = redact(text)
    assert SECRET not in cleaned
    assert "x" * 35 not in cleaned
    assert REDACTED in cleaned


def test_it_keeps_the_shape_of_a_url() -> None:
    url = f"https://api.telegram.org/bot{TOKEN}/sendMessage"
    assert redact(url) == "https://api.telegram.org/bot[REDACTED]/sendMessage"


@pytest.mark.parametrize(
    "text", ["chat 123456789 said hi", "12:30:45", "user 12345:short", "-1001234567890"]
)
def test_it_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


def test_it_redacts_given_secrets_of_any_length() -> None:
    text = "secret=webhook-secret-value and id=s3cret"
    assert redact(text, ["webhook-secret-value", "s3cret"]) == "secret=[REDACTED] and id=[REDACTED]"
    assert redact("key=ab-abc", ["ab", "ab-abc", ""]) == "key=[REDACTED]"  # the longest first


def test_by_default_it_redacts_the_configured_secrets(settings: Any) -> None:
    """A dead letter kept "secret s3cret": the callers pass no secrets, and a 6-character
    webhook secret was below the old minimum length."""
    settings.TELEGRAM_WEBHOOK_SECRET = "s3cret"
    settings.METRICS_TOKEN = "metrics-token-0123456789"
    text = "secret s3cret, bearer metrics-token-0123456789"
    assert redact(text) == "secret [REDACTED], bearer [REDACTED]"
    assert redact(text, []) == text  # explicitly none


def test_the_filter_writes_object_extras_as_redacted_text(captured: Captured) -> None:
    logger, stream = captured

    class Request:
        def __str__(self) -> str:
            return f"<Request GET /bot{TOKEN}/x>"

    logger.handlers[0].setFormatter(logging.Formatter("%(message)s %(request)s %(status)s"))
    logger.info("answered", extra={"request": Request(), "status": 200})
    assert stream.getvalue().strip() == "answered <Request GET /bot[REDACTED]/x> 200"


@given(
    bot_id=st.integers(min_value=10_000, max_value=10**12),
    secret=st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        min_size=30,
        max_size=60,
    ),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
)
def test_no_token_survives_whatever_surrounds_it(
    bot_id: int, secret: str, before: str, after: str
) -> None:
    assert secret not in redact(f"{before}{bot_id}:{secret}{after}")


# -- the logging filter ----------------------------------------------------------------------


@pytest.fixture
def captured() -> Iterator[Captured]:
    """A logger whose only handler carries the filter and writes to a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(TokenRedactingFilter(secrets=["the-webhook-secret"]))
    logger = logging.getLogger("test.redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream
    logger.removeHandler(handler)


def test_the_filter_redacts_the_message_and_its_args(captured: Captured) -> None:
    logger, stream = captured
    logger.info(f"direct {TOKEN}")
    logger.info("POST %s -> %d", f"https://api.telegram.org/bot{TOKEN}/getMe", 200)
    logger.info("mapping %(url)s", {"url": f"/bot{TOKEN}/x"})
    logger.info("webhook secret is %s", "the-webhook-secret")
    output = stream.getvalue()
    assert SECRET not in output
    assert "the-webhook-secret" not in output
    assert "POST https://api.telegram.org/bot[REDACTED]/getMe -> 200" in output
    assert output.count(REDACTED) == 4


def test_the_filter_redacts_tracebacks(captured: Captured) -> None:
    logger, stream = captured
    try:
        raise RuntimeError(f"failed calling https://api.telegram.org/bot{TOKEN}/getMe")
    except RuntimeError:
        logger.exception("call failed")
    output = stream.getvalue()
    assert "Traceback" in output
    assert "RuntimeError: failed calling" in output
    assert SECRET not in output


def test_the_filter_redacts_extra_fields_and_stack_info(captured: Captured) -> None:
    logger, stream = captured
    handler = logger.handlers[0]
    handler.setFormatter(logging.Formatter("%(message)s url=%(url)s"))
    logger.info("hello", extra={"url": f"/bot{TOKEN}/x"}, stack_info=True)
    assert SECRET not in stream.getvalue()


def test_the_filter_survives_a_bad_format_string() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d %d", (TOKEN,), None)
    assert TokenRedactingFilter().filter(record) is True
    assert SECRET not in record.getMessage()


def test_a_handler_filter_sees_records_of_child_loggers() -> None:
    # Why the filter goes on handlers: httpx logs full URLs on its own logger.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(TokenRedactingFilter())
    parent = logging.getLogger("test.redaction.parent")
    parent.addHandler(handler)
    parent.propagate = False
    child = logging.getLogger("test.redaction.parent.httpx")
    child.setLevel(logging.INFO)
    try:
        child.info('HTTP Request: POST %s "HTTP/1.1 200 OK"', f"https://x/bot{TOKEN}/getMe")
    finally:
        parent.removeHandler(handler)
    assert "bot[REDACTED]/getMe" in stream.getvalue()


def test_every_token_the_settings_accept_is_redacted() -> None:
    from config.env import TOKEN_RE

    for token in ("1:abcdefghijklmnopqrst", "1234:ABCDEFGHIJKLMNOPQRST_-12"):
        assert TOKEN_RE.match(token)
        assert token not in redact(f"calling https://api.telegram.org/bot{token}/getMe")
