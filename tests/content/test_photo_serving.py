"""A post's photo cannot carry a page onto the admin origin: uploads are stored under a
generated name whose extension is the detected image type, and the photo view serves what
the bytes are, in a sandbox, whatever a stored file is called."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from content.models import Post
from tests.content.conftest import CHANNEL, make_post, png_bytes

pytestmark = pytest.mark.django_db
SCRIPT = b"<html><script>alert(document.cookie)</script></html>"
HOSTILE_PNG = png_bytes() + SCRIPT  # valid PNG header, a page after it


def photo_url(post: Post) -> str:
    return f"/admin/content/posts/{post.pk}/photo/"


def test_a_png_named_html_is_stored_under_a_generated_png_name(media_root: Path) -> None:
    post = make_post("x", photo=SimpleUploadedFile("evil.html", HOSTILE_PNG, "text/html"))
    name = post.photo.name
    assert re.fullmatch(r"content/photos/\d{4}/\d{2}/[0-9a-f]{32}\.png", name), name
    assert "evil" not in name
    assert (media_root / name).read_bytes() == HOSTILE_PNG


def test_a_stored_photo_is_not_read_again_and_a_new_upload_is_checked(media_root: Path) -> None:
    post = make_post("x", photo=SimpleUploadedFile("photo.png", png_bytes(), "image/png"))
    # The stored file changed behind the post's back: a saved post is not checked again
    # (it was when it was uploaded), so it still validates.
    (media_root / post.photo.name).write_bytes(b"GIF89a....")
    post.full_clean(exclude=["status", "source_update_id"])
    post.photo = SimpleUploadedFile("photo.png", b"GIF89a....", "image/png")
    with pytest.raises(ValidationError, match="JPEG, PNG or WebP"):
        post.full_clean(exclude=["status", "source_update_id"])


@pytest.mark.parametrize(
    ("data", "extension"),
    [
        (b"\xff\xd8\xff\xe0" + b"\x00" * 64, "jpg"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 64, "webp"),
    ],
)
def test_the_extension_follows_the_bytes_not_the_name(data: bytes, extension: str) -> None:
    post = make_post("x", photo=SimpleUploadedFile("photo.png", data, "image/png"))
    assert post.photo.name.endswith(f".{extension}")


def test_an_admin_upload_named_html_is_served_as_a_sandboxed_png(admin_client: Client) -> None:
    upload = SimpleUploadedFile("evil.html", HOSTILE_PNG, "text/html")
    response = admin_client.post(
        "/admin/content/post/add/",
        {
            "channel": CHANNEL,
            "text": "caption",
            "buttons": "",
            "photo": upload,
            "publish_at": "",
        },
    )
    assert response.status_code == 302, response.content[:500]
    post = Post.objects.get()
    assert post.photo.name.endswith(".png")
    served = admin_client.get(photo_url(post))
    assert_sandboxed(served)
    assert served["Content-Type"] == "image/png"
    assert served["Content-Disposition"] == f'inline; filename="post-{post.pk}-photo.png"'
    assert b"".join(served.streaming_content) == HOSTILE_PNG


def test_a_stored_file_named_html_is_served_by_what_its_bytes_are(admin_client: Client) -> None:
    # As stored before names were generated: the uploaded name kept.
    post = make_post("text only")
    legacy = default_storage.save("content/photos/2026/01/evil.html", ContentFile(HOSTILE_PNG))
    Post.objects.filter(pk=post.pk).update(photo=legacy)
    served = admin_client.get(photo_url(post))
    assert served["Content-Type"] == "image/png"
    assert_sandboxed(served)


def test_a_stored_file_that_is_no_image_is_only_offered_as_a_download(
    admin_client: Client,
) -> None:
    post = make_post("text only")
    legacy = default_storage.save("content/photos/2026/01/page.html", ContentFile(SCRIPT))
    Post.objects.filter(pk=post.pk).update(photo=legacy)
    served = admin_client.get(photo_url(post))
    assert served["Content-Type"] == "application/octet-stream"
    assert served["Content-Disposition"] == f'attachment; filename="post-{post.pk}-photo.bin"'
    assert_sandboxed(served)


def test_a_missing_photo_file_is_404(admin_client: Client) -> None:
    post = make_post("text only")
    Post.objects.filter(pk=post.pk).update(photo="content/photos/2026/01/gone.png")
    assert admin_client.get(photo_url(post)).status_code == 404


def assert_sandboxed(response: Any) -> None:
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "html" not in response["Content-Type"]
