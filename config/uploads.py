"""A bound on uploads that holds while the body is read, not after.

Django streams a file upload to a temporary file (above ``FILE_UPLOAD_MAX_MEMORY_SIZE``) and
only then do the forms see its size: a 1 GB "photo" would fill the disk first. This handler
runs first in ``FILE_UPLOAD_HANDLERS``: a multipart body whose ``Content-Length`` is over
``UPLOAD_MAX_BYTES`` (plus room for the other fields) is refused before a byte is read, and a
file that grows past ``UPLOAD_MAX_BYTES`` while it streams stops the request. Both answer 400
(``RequestDataTooBig``, as Django does for ``DATA_UPLOAD_MAX_MEMORY_SIZE``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler

# Room for the form's other fields and the multipart framing.
FORM_OVERHEAD_BYTES = 256 * 1024


class BoundedUploadHandler(FileUploadHandler):
    def handle_raw_input(
        self,
        input_data: Any,
        META: dict[str, Any],
        content_length: int,
        boundary: Any,
        encoding: str | None = None,
    ) -> None:
        self.received = 0
        if content_length > settings.UPLOAD_MAX_BYTES + FORM_OVERHEAD_BYTES:
            raise RequestDataTooBig(
                f"the request body of {content_length} bytes is over the upload limit"
            )

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            raise RequestDataTooBig(f"an uploaded file is over {settings.UPLOAD_MAX_BYTES} bytes")
        return raw_data  # on to the next handler, which stores it

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file
