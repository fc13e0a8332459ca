"""The Bot API specification for the fake server: request parsing and parameter validation.

Reads `../shared/botapi/api.json` (or `$BOTAPI_SPEC_PATH`). A request's parameters may come from
the query string, a JSON body, an urlencoded form or multipart/form-data; in the last three they
arrive as text (objects and arrays JSON-serialised) and are decoded by the types the spec
declares. JSON bodies are checked strictly: `"chat_id": "1"` is a String, `"text": 5` is wrong.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

PRIMITIVES = frozenset({"Integer", "Float", "String", "Boolean"})
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})
_ARRAY = "Array of "
_ATTACH = "attach://"
ATTACHMENTS = "_attachments"  # the params key of the parts sent as attach://<name>


class RequestError(Exception):
    """A request the fake answers with `ok: false` (HTTP status == error_code)."""

    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.description = description


@dataclass(frozen=True)
class UploadedFile:
    """A file part of a multipart request."""

    filename: str
    content_type: str
    data: bytes


@dataclass
class RawParams:
    """A request's parameters before validation: typed (JSON body), text, and file parts."""

    typed: dict[str, Any] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    files: dict[str, UploadedFile] = field(default_factory=dict)

    def merged(self) -> dict[str, Any]:
        """Everything, undecoded: what a call that failed validation is recorded with."""
        return {**self.text, **self.typed, **self.files}


def find_spec_path() -> Path:
    """`$BOTAPI_SPEC_PATH`, else the copy vendored beside this file (tests/fakes/botapi/)."""
    if os.environ.get("BOTAPI_SPEC_PATH"):
        return Path(os.environ["BOTAPI_SPEC_PATH"])
    vendored = Path(__file__).resolve().parent / "botapi" / "api.json"
    if vendored.is_file():
        return vendored
    raise FileNotFoundError("Bot API spec not found; set BOTAPI_SPEC_PATH to api.json")


@functools.lru_cache(maxsize=4)
def load_spec(path: str | None = None) -> BotApiSpec:
    """Load (once per path) and return the spec."""
    with open(path or find_spec_path(), encoding="utf-8") as handle:
        return BotApiSpec(json.load(handle))


def parse_request(content_type: str | None, body: bytes, query: str = "") -> RawParams:
    """Split a request into parameters; RequestError(400) for a body it cannot read."""
    raw = RawParams(text=dict(parse_qsl(query, keep_blank_values=True)))
    mime = (content_type or "").split(";")[0].strip().lower()
    if not body:
        return raw
    try:
        if mime == "application/json":
            raw.typed = _json_object(body)
        elif mime == "application/x-www-form-urlencoded":
            raw.text.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        elif mime == "multipart/form-data":
            _parse_multipart(content_type or "", body, raw)
        else:
            raise RequestError(400, f"Bad Request: unsupported Content-Type {mime!r}")
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(400, f"Bad Request: can't parse request body: {exc}") from None
    return raw


class BotApiSpec:
    """Methods and types of one Bot API version, with a validator for both."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.version: str = data.get("version", "?")
        self.methods: dict[str, dict[str, Any]] = data["methods"]
        self.types: dict[str, dict[str, Any]] = data["types"]
        self._by_lower = {name.lower(): name for name in self.methods}

    def method_name(self, name: str) -> str | None:
        """The canonical name of a method (names are case-insensitive), or None."""
        return self._by_lower.get(name.lower())

    def validate(self, method: str, raw: RawParams) -> dict[str, Any]:
        """Decode and check `raw` against `method`; RequestError(400) on the first problem."""
        fields = {f["name"]: f["types"] for f in self.methods[method].get("fields", [])}
        params: dict[str, Any] = {}
        for name, text in raw.text.items():
            params[name] = self._decode_text(name, text, fields.get(name))
        for name, value in raw.typed.items():
            params[name] = self._checked(name, value, fields.get(name))
        attached = _attach_names(params)
        attachments: dict[str, Any] = {}
        for name, upload in raw.files.items():
            if name in fields or name not in attached:  # attach://name parts are not params
                params[name] = self._checked(name, upload, fields.get(name))
            else:
                attachments[name] = upload
        missing = sorted(attached - set(raw.files))
        if missing:
            raise RequestError(400, f"Bad Request: file attach://{missing[0]} not found")
        for f in self.methods[method].get("fields", []):
            if f["required"] and f["name"] not in params:
                raise RequestError(400, f'Bad Request: parameter "{f["name"]}" is required')
        if attachments:  # for the fake's answer and the tests: never a Bot API parameter
            params[ATTACHMENTS] = attachments
        return params

    def check(self, value: Any, types: list[str], path: str = "$") -> Problem | None:
        """The problem of `value` as any of `types`, or None when one fits.

        Of several failing alternatives the one that got deepest into the value is reported.
        """
        problems = [self._check_one(value, type_name, path) for type_name in types]
        if not problems or not all(problems):
            return None
        if len(types) > 1 and all(p.path == path for p in problems if p):
            return Problem(path, f"must be {' or '.join(types)}, got {_kind(value)}")
        return max((p for p in problems if p), key=lambda p: len(p.path))

    def _check_one(self, value: Any, type_name: str, path: str) -> Problem | None:
        if type_name.startswith(_ARRAY):
            if not isinstance(value, list):
                return Problem(path, f"must be an Array, got {_kind(value)}")
            inner = [type_name[len(_ARRAY) :]]
            items = (self.check(v, inner, f"{path}[{i}]") for i, v in enumerate(value))
            return next((p for p in items if p), None)
        if type_name in PRIMITIVES or type_name == "InputFile":
            ok = _fits(value, type_name)
            return None if ok else Problem(path, f"must be {type_name}, got {_kind(value)}")
        spec = self.types.get(type_name)
        if spec is None:
            return None  # a type the spec does not describe: accept
        if spec.get("subtypes"):
            return self.check(value, spec["subtypes"], path)
        return self._check_fields(value, type_name, spec.get("fields", []), path)

    def _check_fields(
        self, value: Any, type_name: str, fields: list[dict[str, Any]], path: str
    ) -> Problem | None:
        if not isinstance(value, dict):
            return Problem(path, f"must be a {type_name} object, got {_kind(value)}")
        declared = {f["name"]: f for f in fields}
        for f in fields:
            if f["required"] and f["name"] not in value:
                return Problem(path, f'{type_name} needs field "{f["name"]}"')
        for name, item in value.items():
            if name not in declared:
                return Problem(path, f'{type_name} has no field "{name}"')
            if problem := self.check(item, declared[name]["types"], f"{path}.{name}"):
                return problem
        return None

    def _checked(self, name: str, value: Any, types: list[str] | None) -> Any:
        if types is None:
            raise RequestError(400, f'Bad Request: unknown parameter "{name}"')
        if isinstance(value, UploadedFile) and "InputFile" not in types:
            raise RequestError(400, f'Bad Request: parameter "{name}" can\'t be a file')
        if problem := self.check(value, types, name):
            raise RequestError(400, f"Bad Request: parameter {problem}")
        return value

    def _decode_text(self, name: str, text: str, types: list[str] | None) -> Any:
        if types is None:
            raise RequestError(400, f'Bad Request: unknown parameter "{name}"')
        problems = []
        for type_name in types:
            decoded = _from_text(text, type_name)
            if decoded is _NO:
                continue
            problem = self.check(decoded, [type_name], name)
            if problem is None:
                return decoded
            problems.append(problem)
        problem = max(problems, key=lambda p: len(p.path), default=None)
        if problem is None or problem.path == name:
            problem = Problem(name, f"must be {' or '.join(types)}, got {text[:40]!r}")
        raise RequestError(400, f"Bad Request: parameter {problem}")


class Problem(NamedTuple):
    """Where a value does not fit the spec, and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


_NO = object()


def _from_text(text: str, type_name: str) -> Any:
    """`text` read as `type_name`, or _NO."""
    try:
        if type_name == "Integer":
            return int(text) if text.strip().lstrip("-").isdigit() else _NO
        if type_name == "Float":
            return float(text)
        if type_name == "Boolean":
            lowered = text.lower()
            return True if lowered in _TRUE else False if lowered in _FALSE else _NO
        if type_name in ("String", "InputFile"):
            return text
        return json.loads(text)  # arrays and objects arrive JSON-serialised
    except ValueError:
        return _NO


def _fits(value: Any, type_name: str) -> bool:
    if type_name == "Integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "Float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "Boolean":
        return isinstance(value, bool)
    if type_name == "InputFile":
        return isinstance(value, (UploadedFile, str))
    return isinstance(value, str)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _attach_names(value: Any) -> set[str]:
    """Names referenced as `attach://<name>` anywhere in the decoded params."""
    if isinstance(value, str):
        return {value[len(_ATTACH) :]} if value.startswith(_ATTACH) else set()
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return set().union(*(_attach_names(item) for item in items))


def _json_object(body: bytes) -> dict[str, Any]:
    value = json.loads(body.decode("utf-8"))
    if not isinstance(value, dict):
        raise RequestError(400, "Bad Request: the JSON body must be an object")
    return value


def _parse_multipart(content_type: str, body: bytes, raw: RawParams) -> None:
    boundary = _header_param(f"Content-Type: {content_type}", "content-type", "boundary")
    if not boundary:
        raise ValueError("multipart body without a boundary")
    for part in body.split(b"--" + boundary.encode())[1:]:
        if part.startswith(b"--"):
            break  # the closing delimiter
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = head.decode("utf-8")
        name = _header_param(headers, "content-disposition", "name")
        if not name:
            raise ValueError("multipart part without a name")
        data = data.removesuffix(b"\r\n")
        filename = _header_param(headers, "content-disposition", "filename")
        if filename is None:
            raw.text[name] = data.decode("utf-8")
        else:
            ctype = HeaderParser().parsestr(headers).get_content_type()
            raw.files[name] = UploadedFile(filename, ctype, data)


def _header_param(headers: str, header: str, param: str) -> str | None:
    value = HeaderParser().parsestr(headers).get_param(param, header=header)
    return None if value is None else str(value) if isinstance(value, str) else str(value[2])
