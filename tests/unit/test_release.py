"""The version in pyproject.toml, /healthz and the CHANGELOG agree: a development version has an
unreleased section on top, a release a dated one."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_changelog_top_section_matches_the_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sections = re.findall(r"^## (\S+) \(([^)]*)\)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    release, when = sections[0]
    if ".dev" in version:
        assert (release, when) == (version.split(".dev")[0], "unreleased")
    else:
        assert release == version and re.fullmatch(r"\d{4}-\d{2}-\d{2}", when)
    # Every other section is a dated release.
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) for _name, day in sections[1:-1])
