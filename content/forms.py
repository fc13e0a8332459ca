"""Admin-site form pieces for posts."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext, gettext_lazy

from content import validation


class ButtonsField(forms.CharField):
    """Inline URL buttons as text: one row per line, ``Label | URL``, ``&&`` between buttons."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 80})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            gettext_lazy(
                "One row per line; each button 'Label | https://…' (http, https or tg links); "
                "several buttons in a row separated by '&&'. At most 10 rows."
            ),
        )
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return validation.format_buttons(value)
        return value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        text = super().to_python(value)
        try:
            return validation.parse_buttons(text or "")
        except ValidationError as exc:
            raise ValidationError(exc.messages) from None


class PollOptionsField(forms.CharField):
    """A poll's options as text: one per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", gettext_lazy("2 to 10 answers, one per line."))
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class ChannelsField(forms.CharField):
    """Other channels as text: one per line."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class AlbumField(forms.CharField):
    """An album as text: one item per line, ``photo <file id or link>`` or ``video …``."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        for unused in ("encoder", "decoder", "max_length"):
            kwargs.pop(unused, None)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return validation.format_album(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, list):
            return value
        return validation.parse_album(super().to_python(value) or "")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class AlbumFilesField(forms.FileField):
    """Photos and videos uploaded for an album (several files in one input)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return bool(data)  # the widget gives [] when nothing was chosen

    def clean(self, data: Any, initial: Any = None) -> Any:
        one = super().clean
        if isinstance(data, list | tuple):
            return [one(item, initial) for item in data if item]
        return [one(data, initial)] if data else []


class PostAdminForm(forms.ModelForm):
    """The post form: publish_at, when set or changed, must be ahead (a past time is refused
    here rather than silently publishing at once). A quiz's correct option is the one whose
    line starts with ``*``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        post = self.instance
        if post.pk and post.is_quiz and post.poll_correct_option is not None:
            options = list(post.poll_options)
            if 0 <= post.poll_correct_option < len(options):
                options[post.poll_correct_option] = (
                    validation.QUIZ_MARK + options[post.poll_correct_option]
                )
                self.initial["poll_options"] = options

    def clean_delete_at(self) -> Any:
        return self._later("delete_at")

    def clean_unpin_at(self) -> Any:
        return self._later("unpin_at")

    def _later(self, name: str) -> Any:
        value = self.cleaned_data.get(name)
        if value is not None and name in self.changed_data:
            try:
                validation.check_later(value, field=name)
            except ValidationError as exc:
                raise ValidationError(exc.messages) from None
        return value

    album_files = AlbumFilesField(
        label=gettext_lazy("Upload to the album"),
        help_text=gettext_lazy(
            "Photos (JPEG, PNG or WebP, at most 10 MB) or MP4 videos (at most 50 MB), added "
            "after the album's lines; stored here and uploaded when the post is sent."
        ),
    )

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or self.cleaned_data
        self._clean_album_files(data)
        if "poll_options" not in data or "poll_type" not in self.fields:
            return data
        options, marked = validation.split_quiz_mark(data["poll_options"] or [])
        if data.get("poll_type") != "quiz":
            self.instance.poll_correct_option = None
            return data
        if len(marked) != 1:
            self.add_error(
                "poll_options",
                gettext("A quiz needs exactly one correct option: start its line with *."),
            )
            return data
        data["poll_options"] = options
        data["poll_correct_option"] = self.instance.poll_correct_option = marked[0]
        return data

    def clean_publish_at(self) -> Any:
        value = self.cleaned_data.get("publish_at")
        if value is not None and "publish_at" in self.changed_data:
            try:
                validation.check_publish_at(value)
            except ValidationError as exc:
                raise ValidationError(exc.messages) from None
        return value

    def _clean_album_files(self, data: dict[str, Any]) -> None:
        """Uploaded album files: each checked, given the name it will be stored under, and
        added to the album's items (``album_uploads``: what the save stores)."""
        self.album_uploads: list[tuple[str, Any]] = []
        files = data.get("album_files") or []
        if not files or "album" not in data:
            return
        items = list(data["album"] or [])
        for upload in files:
            try:
                kind = validation.check_album_upload(upload)
            except ValidationError as exc:
                self.add_error("album_files", f"{upload.name}: {' '.join(exc.messages)}")
                return
            head = validation.read_head(upload, validation.PHOTO_HEAD_BYTES)
            name = validation.album_upload_name(kind, head)
            self.album_uploads.append((name, upload))
            items.append({"type": kind, "media": validation.ALBUM_UPLOAD + name})
        data["album"] = items
