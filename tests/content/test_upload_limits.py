"""An upload over the limit is refused while the body is read: a Content-Length over it before
a byte is read, a file growing past it as soon as it does, with 400 and no post saved."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from config.uploads import FORM_OVERHEAD_BYTES, BoundedUploadHandler
from content import conf
from content.models import Post
from tests.content.conftest import CHANNEL, png_bytes

pytestmark = pytest.mark.django_db
ADD = "/admin/content/post/add/"


class CountingInput(io.BytesIO):
    """A request body that remembers how much of it was read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.taken += len(line)
        return line


def form_body(photo: bytes) -> bytes:
    upload = io.BytesIO(photo)
    upload.name = "big.png"
    fields = {"channel": CHANNEL, "text": "caption", "buttons": "", "photo": upload}
    return encode_multipart(BOUNDARY, {**fields, "publish_at": ""})


def post_raw(client: Client, body: bytes, *, length: int) -> tuple[Any, CountingInput]:
    stream = CountingInput(body)
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": ADD,
        "CONTENT_TYPE": MULTIPART_CONTENT,
        "CONTENT_LENGTH": str(length),
        "wsgi.input": stream,
    }
    return client.request(**environ), stream


def test_the_limit_is_at_least_the_largest_photo() -> None:
    assert settings.UPLOAD_MAX_BYTES >= conf.PHOTO_MAX_BYTES


def test_a_body_announced_over_the_limit_is_refused_before_it_is_read(
    admin_client: Client,
) -> None:
    body = form_body(png_bytes() + b"\0" * (settings.UPLOAD_MAX_BYTES + FORM_OVERHEAD_BYTES))
    response, stream = post_raw(admin_client, body, length=len(body))
    assert response.status_code == 400
    assert stream.taken == 0
    assert not Post.objects.exists()


def test_a_file_growing_past_the_limit_stops_the_upload(
    admin_client: Client, settings: Any
) -> None:
    settings.UPLOAD_MAX_BYTES = 200 * 1024  # the body passes the first check, the file not
    body = form_body(png_bytes() + b"\0" * (400 * 1024))
    assert len(body) < settings.UPLOAD_MAX_BYTES + FORM_OVERHEAD_BYTES
    response, stream = post_raw(admin_client, body, length=len(body))
    assert response.status_code == 400
    assert stream.taken < len(body) - 100 * 1024  # stopped early, not after the whole body
    assert not Post.objects.exists()


def test_a_photo_under_the_limit_is_saved(admin_client: Client) -> None:
    body = form_body(png_bytes())
    response, _ = post_raw(admin_client, body, length=len(body))
    assert response.status_code == 302
    assert Post.objects.get().photo.name.endswith(".png")


def test_the_handler_counts_each_file_on_its_own(settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = 10
    handler = BoundedUploadHandler()
    handler.handle_raw_input(None, {}, 100, b"b")
    for _ in range(2):
        handler.new_file("photo", "a.png", "image/png", 8)
        assert handler.receive_data_chunk(b"x" * 8, 0) == b"x" * 8
    with pytest.raises(RequestDataTooBig):
        handler.receive_data_chunk(b"x" * 3, 8)
