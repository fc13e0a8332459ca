"""initData and the Login Widget, checked as Telegram documents them: forged, altered,
expired, replayed and other-bot data are refused."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode

import pytest

from tests.webapp.helpers import init_data, widget_fields
from webapp.auth import AuthError, init_data_check, login_widget_check

TOKEN = "123456789:AAE-our-bot-token-0123456789abcdefghij"
OTHER_TOKEN = "987654321:AAE-another-bots-token-0123456789abcd"


def test_it_accepts_initdata_signed_with_the_bot_token() -> None:
    identity = init_data_check(
        init_data(TOKEN, 42, start_param="-100777"), bot_token=TOKEN, max_age=60
    )
    assert identity.user_id == 42 and identity.first_name == "Ann"
    assert identity.language_code == "en" and identity.start_param == "-100777"


def test_it_refuses_a_forged_hash() -> None:
    fields = dict(parse_qsl(init_data(TOKEN, 42)))
    fields["hash"] = "0" * 64
    with pytest.raises(AuthError):
        init_data_check(urlencode(fields), bot_token=TOKEN, max_age=60)


def test_it_refuses_altered_initdata() -> None:
    fields = dict(parse_qsl(init_data(TOKEN, 42)))
    fields["user"] = fields["user"].replace("42", "43")
    with pytest.raises(AuthError):
        init_data_check(urlencode(fields), bot_token=TOKEN, max_age=60)


def test_it_refuses_initdata_without_a_hash_or_with_a_repeated_field() -> None:
    fields = dict(parse_qsl(init_data(TOKEN, 42)))
    del fields["hash"]
    with pytest.raises(AuthError):
        init_data_check(urlencode(fields), bot_token=TOKEN, max_age=60)
    with pytest.raises(AuthError):
        init_data_check(init_data(TOKEN, 42) + "&auth_date=1", bot_token=TOKEN, max_age=60)


def test_it_refuses_expired_and_future_initdata() -> None:
    old = init_data(TOKEN, 42, auth_date=int(time.time()) - 61)
    with pytest.raises(AuthError):
        init_data_check(old, bot_token=TOKEN, max_age=60)
    assert init_data_check(old, bot_token=TOKEN, max_age=120).user_id == 42
    future = init_data(TOKEN, 42, auth_date=int(time.time()) + 3600)
    with pytest.raises(AuthError):
        init_data_check(future, bot_token=TOKEN, max_age=60)


def test_it_refuses_initdata_of_another_bot() -> None:
    with pytest.raises(AuthError):
        init_data_check(init_data(OTHER_TOKEN, 42), bot_token=TOKEN, max_age=60)


def test_it_refuses_the_login_widget_scheme_for_initdata_and_back() -> None:
    """The two schemes use different keys: a widget-signed answer is no initData."""
    widget = widget_fields(TOKEN, 42)
    with pytest.raises(AuthError):
        init_data_check(urlencode(widget), bot_token=TOKEN, max_age=60)
    fields = dict(parse_qsl(init_data(TOKEN, 42)))
    with pytest.raises(AuthError):
        login_widget_check(fields, bot_token=TOKEN, max_age=60)


@pytest.mark.parametrize("bad", ["", "a=%ZZ&&", "x" * 9000, "hash=abc"])
def test_it_refuses_malformed_initdata(bad: str) -> None:
    with pytest.raises(AuthError):
        init_data_check(bad, bot_token=TOKEN, max_age=60)


def test_it_refuses_a_user_that_is_not_a_user_id() -> None:
    import hashlib
    import hmac

    fields = {"user": '{"id":"42"}', "auth_date": str(int(time.time()))}
    secret = hmac.new(b"WebAppData", TOKEN.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{k}={fields[k]}" for k in sorted(fields))
    fields["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    with pytest.raises(AuthError):
        init_data_check(urlencode(fields), bot_token=TOKEN, max_age=60)


def test_it_accepts_a_login_widget_answer_and_refuses_a_forged_one() -> None:
    fields = widget_fields(TOKEN, 42)
    assert login_widget_check(dict(fields), bot_token=TOKEN, max_age=60).user_id == 42
    forged = dict(fields, hash="f" * 64)
    with pytest.raises(AuthError):
        login_widget_check(forged, bot_token=TOKEN, max_age=60)
    altered = dict(fields, id="43")
    with pytest.raises(AuthError):
        login_widget_check(altered, bot_token=TOKEN, max_age=60)
    with pytest.raises(AuthError):
        login_widget_check(widget_fields(OTHER_TOKEN, 42), bot_token=TOKEN, max_age=60)
    with pytest.raises(AuthError):
        login_widget_check(
            widget_fields(TOKEN, 42, auth_date=int(time.time()) - 120), bot_token=TOKEN, max_age=60
        )
    with pytest.raises(AuthError):
        login_widget_check(dict(fields, extra="1"), bot_token=TOKEN, max_age=60)
