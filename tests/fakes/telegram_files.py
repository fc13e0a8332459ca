"""The files of the fake Bot API: getFile and the file download URL.

A test stores a file under a file id (``FakeTelegram.add_file``); getFile answers its File
(checked against the spec's ``File`` type) with a ``file_path``, and
``GET /file/bot<token>/<file_path>`` answers its bytes, as Telegram does. Unknown ids get
Telegram's "invalid file_id", files over 20 MB "file is too big", unknown paths 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakes.botapi_spec import BotApiSpec, RequestError

DOWNLOAD_LIMIT = 20 * 1024 * 1024  # what bots may download, says getFile's description
INVALID_FILE_ID = "Bad Request: invalid file_id"
TOO_BIG = "Bad Request: file is too big"
FOLDERS = {"voice": ("voice", "oga"), "video_note": ("video_notes", "mp4")}

Json = dict[str, Any]


@dataclass(frozen=True)
class StoredFile:
    file_id: str
    data: bytes
    path: str


class FileResults:
    """The file methods of ``Results``; it provides ``spec``."""

    spec: BotApiSpec

    def _init_files(self) -> None:
        self.files: dict[str, StoredFile] = {}
        self.files_by_path: dict[str, StoredFile] = {}

    def add_file(self, file_id: str, data: bytes, kind: str = "voice") -> str:
        """Store ``data`` under ``file_id``; returns the file_path getFile will give."""
        folder, extension = FOLDERS.get(kind, ("documents", "bin"))
        stored = StoredFile(file_id, data, f"{folder}/file_{len(self.files)}.{extension}")
        self.files[file_id] = stored
        self.files_by_path[stored.path] = stored
        return stored.path

    def _getFile(self, params: Json, bot_id: int) -> Json:
        stored = self.files.get(params["file_id"])
        if stored is None:
            raise RequestError(400, INVALID_FILE_ID)
        if len(stored.data) > DOWNLOAD_LIMIT:
            raise RequestError(400, TOO_BIG)
        result = {
            "file_id": stored.file_id,
            "file_unique_id": f"u-{stored.file_id}"[:32],
            "file_size": len(stored.data),
            "file_path": stored.path,
        }
        problem = self.spec.check(result, ["File"])
        assert problem is None, f"the fake's File does not match the spec: {problem}"
        return result

    def download(self, path: str) -> bytes | None:
        stored = self.files_by_path.get(path)
        return stored.data if stored is not None else None
