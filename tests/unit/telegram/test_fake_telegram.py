"""The fake Bot API server: spec checks, request encodings, fault injection, recording."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer, UploadedFile

MARKUP = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}


@pytest.fixture
def http(fake_telegram: FakeTelegramServer) -> Iterator[httpx.Client]:
    """A bare httpx client aimed at the fake (so each test controls the encoding)."""
    with httpx.Client(base_url=fake_telegram.base_url, timeout=5.0) as client:
        yield client


def _post(
    http: httpx.Client, method: str, token: str = FAKE_TOKEN, **kwargs: Any
) -> httpx.Response:
    return http.post(f"/bot{token}/{method}", **kwargs)


def _error(response: httpx.Response) -> tuple[int, str]:
    body = response.json()
    assert body["ok"] is False
    assert body["error_code"] == response.status_code
    return response.status_code, body["description"]


# -- rejections --------------------------------------------------------------------------------


def test_an_unknown_method_is_404(http: httpx.Client) -> None:
    response = _post(http, "sendTelepathy", json={"chat_id": 1})
    assert response.status_code == 404
    assert response.json() == {"ok": False, "error_code": 404, "description": "Not Found"}


def test_method_names_are_case_insensitive(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    assert _post(http, "getme").json()["ok"] is True
    assert fake_telegram.calls[0].method == "getMe"


@pytest.mark.parametrize("token", ["notatoken", "123:", ":abc", "abc:def"])
def test_a_malformed_token_is_401(http: httpx.Client, token: str) -> None:
    assert _error(_post(http, "getMe", token=token)) == (401, "Unauthorized")


def test_a_server_can_accept_one_token_only() -> None:
    with FakeTelegramServer(token="42:right") as server, httpx.Client() as http:
        assert http.post(f"{server.base_url}/bot42:right/getMe").json()["result"]["id"] == 42
        assert http.post(f"{server.base_url}/bot{FAKE_TOKEN}/getMe").status_code == 401


def test_an_unknown_parameter_is_400(http: httpx.Client) -> None:
    status, description = _error(
        _post(http, "sendMessage", json={"chat_id": 1, "text": "x", "txet": "y"})
    )
    assert status == 400
    assert '"txet"' in description


def test_a_missing_required_parameter_is_400(http: httpx.Client) -> None:
    assert _error(_post(http, "sendMessage", json={"chat_id": 1})) == (
        400,
        'Bad Request: parameter "text" is required',
    )


@pytest.mark.parametrize(
    ("params", "culprit"),
    [
        ({"chat_id": True, "text": "x"}, "chat_id"),
        ({"chat_id": 1.5, "text": "x"}, "chat_id"),
        ({"chat_id": 1, "text": 5}, "text"),
        ({"chat_id": 1, "text": None}, "text"),
        ({"chat_id": 1, "text": "x", "disable_notification": "yes"}, "disable_notification"),
        ({"chat_id": 1, "text": "x", "reply_markup": [1]}, "reply_markup"),
        ({"chat_id": 1, "text": "x", "entities": {"type": "bold"}}, "entities"),
        (
            {"chat_id": 1, "text": "x", "reply_markup": {"inline_keyboard": [[{"txt": "A"}]]}},
            "reply_markup.inline_keyboard[0][0]",
        ),
    ],
)
def test_a_wrong_type_is_400(http: httpx.Client, params: dict[str, Any], culprit: str) -> None:
    status, description = _error(_post(http, "sendMessage", json=params))
    assert status == 400
    assert f"parameter {culprit}:" in description


def test_form_values_are_type_checked_after_decoding(http: httpx.Client) -> None:
    form = {"chat_id": "1", "text": "x", "disable_notification": "maybe"}
    status, description = _error(_post(http, "sendMessage", data=form))
    assert status == 400
    assert "disable_notification" in description


def test_a_file_for_a_parameter_that_is_not_an_input_file_is_400(http: httpx.Client) -> None:
    response = _post(http, "sendMessage", data={"chat_id": "1"}, files={"text": ("t.txt", b"x")})
    assert _error(response) == (400, 'Bad Request: parameter "text" can\'t be a file')


def test_a_body_it_cannot_parse_is_400(http: httpx.Client) -> None:
    response = _post(
        http, "getMe", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert _error(response)[0] == 400


# -- encodings ---------------------------------------------------------------------------------

EXPECTED = {"chat_id": -1001, "text": "héllo", "reply_markup": MARKUP, "disable_notification": True}
AS_TEXT = {
    "chat_id": "-1001",
    "text": "héllo",
    "reply_markup": json.dumps(MARKUP),
    "disable_notification": "true",
}


@pytest.mark.parametrize(
    "request_kwargs",
    [
        pytest.param({"json": EXPECTED}, id="json"),
        pytest.param({"data": AS_TEXT}, id="urlencoded"),
        pytest.param({"files": {k: (None, v) for k, v in AS_TEXT.items()}}, id="multipart"),
        pytest.param({"params": AS_TEXT}, id="query-string"),
    ],
)
def test_every_encoding_decodes_to_the_same_params(
    http: httpx.Client, fake_telegram: FakeTelegramServer, request_kwargs: dict[str, Any]
) -> None:
    response = _post(http, "sendMessage", **request_kwargs)
    assert response.json()["ok"] is True, response.text
    assert fake_telegram.calls_to("sendMessage")[0].params == EXPECTED


def test_multipart_files_arrive_as_uploads(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    data = bytes(range(256)) * 4  # every byte value, CR and LF included
    files = {"photo": ("p.jpg", data, "image/jpeg")}
    response = _post(http, "sendPhoto", data={"chat_id": "1", "caption": "hi"}, files=files)
    assert response.json()["ok"] is True, response.text
    params = fake_telegram.calls_to("sendPhoto")[0].params
    assert params == {
        "chat_id": 1,
        "caption": "hi",
        "photo": UploadedFile("p.jpg", "image/jpeg", data),
    }


def test_get_requests_work_too(http: httpx.Client) -> None:
    response = http.get(f"/bot{FAKE_TOKEN}/getMe")
    assert response.json()["result"]["is_bot"] is True


def test_files_referenced_with_attach_are_accepted(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    media = [
        {"type": "photo", "media": "attach://one"},
        {"type": "photo", "media": "attach://two"},
    ]
    files = {"one": ("1.jpg", b"1"), "two": ("2.jpg", b"2")}
    response = _post(
        http, "sendMediaGroup", data={"chat_id": "1", "media": json.dumps(media)}, files=files
    )
    assert response.json()["ok"] is True, response.text
    assert fake_telegram.calls_to("sendMediaGroup")[0].params["media"] == media


# -- fault injection ---------------------------------------------------------------------------


def test_fail_next_429_carries_retry_after(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("sendMessage", times=2, status=429, retry_after=3)
    for _ in range(2):
        response = _post(http, "sendMessage", json={"chat_id": 1, "text": "x"})
        assert response.status_code == 429
        assert response.headers["Retry-After"] == "3"
        assert response.json() == {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 3",
            "parameters": {"retry_after": 3},
        }
    assert _post(http, "sendMessage", json={"chat_id": 1, "text": "x"}).status_code == 200


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, (500, "Internal Server Error")),
        (
            {"status": 400, "description": "Bad Request: chat not found"},
            (400, "Bad Request: chat not found"),
        ),
        (
            {"status": 403, "description": "Forbidden: bot was blocked by the user"},
            (403, "Forbidden: bot was blocked by the user"),
        ),
    ],
)
def test_fail_next_answers_like_telegram(
    http: httpx.Client,
    fake_telegram: FakeTelegramServer,
    kwargs: dict[str, Any],
    expected: tuple[int, str],
) -> None:
    fake_telegram.fail_next("getMe", **kwargs)
    assert _error(_post(http, "getMe")) == expected
    assert _post(http, "getMe").status_code == 200


def test_fail_next_can_set_an_error_code_other_than_the_status(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("getMe", status=502, error_code=500)
    response = _post(http, "getMe")
    assert (response.status_code, response.json()["error_code"]) == (502, 500)


def test_invalid_calls_do_not_use_up_a_fault(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.fail_next("sendMessage", status=500)
    assert _post(http, "sendMessage", json={"chat_id": 1}).status_code == 400
    assert _post(http, "sendMessage", json={"chat_id": 1, "text": "x"}).status_code == 500


def test_a_delay_makes_the_answer_slow(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.delay_next("getMe", 0.3)
    started = time.monotonic()
    assert _post(http, "getMe").status_code == 200
    assert time.monotonic() - started >= 0.3


def test_a_blocked_chat_answers_403_until_unblocked(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    fake_telegram.block_chat(100)
    send = {"chat_id": 100, "text": "x"}
    assert _error(_post(http, "sendMessage", json=send)) == (
        403,
        "Forbidden: bot was blocked by the user",
    )
    assert _post(http, "sendMessage", json={"chat_id": 101, "text": "x"}).status_code == 200
    assert _post(http, "sendMessage", data={"chat_id": "100", "text": "x"}).status_code == 403
    fake_telegram.unblock_chat(100)
    assert _post(http, "sendMessage", json=send).status_code == 200


# -- recording ---------------------------------------------------------------------------------


def test_every_call_is_recorded_with_decoded_params(
    http: httpx.Client, fake_telegram: FakeTelegramServer
) -> None:
    before = time.time()
    _post(http, "sendMessage", data={"chat_id": "7", "text": "x"})
    fake_telegram.fail_next("getMe", status=500)
    _post(http, "getMe")
    _post(http, "sendMessage", json={"chat_id": 7})
    first, second, third = fake_telegram.calls
    assert (first.method, first.params, first.token, first.failed) == (
        "sendMessage",
        {"chat_id": 7, "text": "x"},
        FAKE_TOKEN,
        False,
    )
    assert first.time >= before
    assert (second.method, second.status, second.failed) == ("getMe", 500, True)
    assert (third.status, third.failed, third.params) == (400, True, {"chat_id": 7})
    assert [c.method for c in fake_telegram.calls_to("sendMessage")] == [
        "sendMessage",
        "sendMessage",
    ]
    fake_telegram.reset()
    assert fake_telegram.calls == []


def test_a_client_that_resets_its_connection_leaves_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A process a test kills mid-call resets its connection, as Telegram would see it too; the
    fake answers the next client and prints nothing for it."""
    import socket
    import struct

    with FakeTelegramServer() as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        raw = socket.create_connection((host, int(port)))
        raw.sendall(b"POST /bot")  # a request line cut off...
        time.sleep(0.1)  # ...that the handler is reading when the reset comes
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()  # SO_LINGER 0: a reset, not a FIN
        time.sleep(0.2)
        answer = httpx.post(f"{server.base_url}/bot{FAKE_TOKEN}/getMe", timeout=5)
        assert answer.status_code == 200
    assert "Traceback" not in capsys.readouterr().err
