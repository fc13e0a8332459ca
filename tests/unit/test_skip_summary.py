"""``make test``'s closing summary: where the SKIPPED lines are, and the right advice for each
kind of skip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import skip_advice

ROOT = Path(__file__).resolve().parents[2]


def test_each_kind_of_skip_gets_its_own_advice() -> None:
    advice = skip_advice(
        [
            "Skipped: browser tests: chromium not installed (apt-get install chromium)",
            "Skipped: Redis backend: REDIS_URL not set",
            "Skipped: the whole gate passes only on PostgreSQL with Redis (DATABASE_URL)",
            "Skipped: needs make",
        ]
    )
    assert advice == [
        "2 need PostgreSQL or Redis: set DATABASE_URL=postgres://... and REDIS_URL=redis://... "
        "(README, 'The two commands')",
        "1 need Chromium: apt-get install chromium",
        "1 need a tool their reason names (make, redis-server, pg_dump...)",
    ]
    assert skip_advice(["Skipped: browser tests: chromium not installed"]) == [
        "1 need Chromium: apt-get install chromium"  # no database advice for a browser skip
    ]


def test_the_summary_comes_before_the_skipped_lines_it_points_to(tmp_path: Path) -> None:
    test = tmp_path / "test_skips.py"
    test.write_text(
        "import pytest\n\n"
        "def test_browser():\n    pytest.skip('browser tests: chromium not installed')\n\n"
        "def test_backend():\n    pytest.skip('REDIS_URL not set')\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(test), "-c", "pyproject.toml", "-p", "tests.conftest",
         "-n", "0", "-q", "-p", "no:randomly"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = result.stdout
    summary = out.index("tests skipped: 2 (the SKIPPED lines below give each reason)")
    assert summary < out.index("SKIPPED [1]"), out
    assert "1 need Chromium" in out and "1 need PostgreSQL or Redis" in out
