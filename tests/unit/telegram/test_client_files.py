"""TelegramClient file downloads: getFile, then the file URL, streamed with a size bound and
without the token in any error."""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import httpx
import pytest

from telegram_bot.client import FileStream, TelegramClient
from telegram_bot.errors import FileTooLargeError, TelegramApiError
from tests.fakes.telegram import FAKE_TOKEN, FakeTelegramServer
from tests.fakes.telegram_core import DOWNLOAD
from tests.fakes.telegram_files import INVALID_FILE_ID

SECRET = FAKE_TOKEN.split(":", 1)[1]
DATA = bytes(range(256)) * 1000  # 256 KB: several chunks


@pytest.fixture
def files_client(fake_telegram: FakeTelegramServer) -> Iterator[TelegramClient]:
    with TelegramClient(FAKE_TOKEN, fake_telegram.base_url) as client:
        yield client


def test_a_file_is_found_then_streamed_in_chunks(
    files_client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    path = fake_telegram.add_file("f1", DATA)
    info = files_client.get_file(file_id="f1")
    assert (info["file_path"], info["file_size"]) == (path, len(DATA))
    stream = files_client.download_file(path, max_bytes=len(DATA))
    chunks = list(stream)
    assert stream.size == len(DATA) and len(chunks) > 1 and b"".join(chunks) == DATA
    assert fake_telegram.calls_to(DOWNLOAD)[0].params == {"file_path": path}


def test_errors_name_no_token(
    files_client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    with pytest.raises(TelegramApiError) as unknown:
        files_client.get_file(file_id="nope")
    assert unknown.value.description == INVALID_FILE_ID
    with pytest.raises(TelegramApiError) as missing:
        files_client.download_file("voice/file_9.oga", max_bytes=10)
    assert missing.value.status == 404
    fake_telegram.fail_next(DOWNLOAD, drop_connection=True)
    path = fake_telegram.add_file("f2", DATA)
    with pytest.raises(TelegramApiError) as dropped:
        list(files_client.download_file(path, max_bytes=len(DATA)))
    for error in (unknown.value, missing.value, dropped.value):
        assert SECRET not in "".join(traceback.format_exception(error))


@pytest.mark.parametrize("path", ["../bot1:x/getMe", "/etc/passwd", "voice/a?x=1", "a/../b", ""])
def test_a_path_getfile_would_not_give_is_refused(files_client: TelegramClient, path: str) -> None:
    with pytest.raises(ValueError, match="not a Bot API file path"):
        files_client.download_file(path, max_bytes=10)


def test_the_bound_holds_before_and_while_the_file_streams(
    files_client: TelegramClient, fake_telegram: FakeTelegramServer
) -> None:
    path = fake_telegram.add_file("f3", DATA)
    with pytest.raises(FileTooLargeError):
        files_client.download_file(path, max_bytes=len(DATA) - 1)  # Content-Length says so
    # A server that announces no length is cut off once the bound is passed.
    unannounced = httpx.Response(200, content=iter([b"a" * 70_000, b"b" * 70_000]))
    stream = FileStream(unannounced, max_bytes=100_000)
    assert stream.size is None
    received: list[bytes] = []
    with pytest.raises(FileTooLargeError):
        received.extend(stream)
    assert unannounced.is_closed


@pytest.mark.parametrize("length", ["\u00b2", "-1", "1e3", ""])
def test_a_length_that_is_not_a_byte_count_is_no_length(length: str) -> None:
    headers = [(b"Content-Length", length.encode("latin-1"))]  # as a server may send it
    response = httpx.Response(200, headers=headers, content=b"abc")
    assert FileStream(response, max_bytes=10).size is None
