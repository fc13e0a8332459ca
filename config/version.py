"""The product's version: ``pyproject.toml``'s, plus the build's commit when the image has one.

Shown by ``/healthz`` and under the admin site's header, so an operator can tell which release
(and which build of it) answers.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _version() -> str:
    try:
        with PYPROJECT.open("rb") as handle:
            version = str(tomllib.load(handle)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = "unknown"
    # Set by the image build (Dockerfile ARG GIT_COMMIT); short hex only.
    commit = os.environ.get("GIT_COMMIT", "").strip()[:12]
    return f"{version}+{commit}" if commit.isalnum() and commit else version


VERSION = _version()
