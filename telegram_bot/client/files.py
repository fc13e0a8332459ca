"""Downloads of files the bot received (getFile, then the file URL), streamed with a bound.

The file URL holds the token: it is built by the client and used here, server side only;
callers get the bytes, never the URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx

from telegram_bot.errors import FileTooLargeError, TelegramApiError
from telegram_bot.numbers import ascii_int

CHUNK_BYTES = 64 * 1024
# What getFile answers as file_path: "voice/file_12.oga", "video_notes/file_3.mp4".
_FILE_PATH = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_.-]+)*")


def check_file_path(file_path: str) -> str:
    """A relative path of the shape getFile gives, nothing that could leave the file URL
    (no "..", no absolute path, no query)."""
    if not _FILE_PATH.fullmatch(file_path) or ".." in file_path or len(file_path) > 512:
        raise ValueError("not a Bot API file path")
    return file_path


class FileStream:
    """The body of a file download: iterate for its chunks, then ``close()`` (Django's
    StreamingHttpResponse closes it when the response ends, iterated or not). Iterating past
    ``max_bytes`` raises FileTooLargeError, whatever the server said the length was."""

    def __init__(self, response: httpx.Response, max_bytes: int) -> None:
        self._response = response
        self.max_bytes = max_bytes
        length = response.headers.get("Content-Length", "")
        self.size = ascii_int(length)

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        chunks = self._response.iter_bytes(CHUNK_BYTES)
        try:
            while True:
                failure: httpx.HTTPError | None = None
                try:
                    chunk = next(chunks, None)
                except httpx.HTTPError as exc:
                    failure = exc
                if failure is not None:
                    # Raised outside the except block: the httpx error's request holds the URL.
                    raise TelegramApiError("getFile download", description=_describe(failure))
                if chunk is None:
                    return
                received += len(chunk)
                if received > self.max_bytes:
                    raise FileTooLargeError(f"file over {self.max_bytes} bytes")
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        self._response.close()


def _describe(exc: Exception) -> str:
    return f"network error ({type(exc).__name__})"
