"""``make bench --readme`` rewrites the README's summary table between its markers and leaves
everything else, a comment on a run under the table included, as it was."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bench.report import Row, Section
from bench.run import README_END, README_START, update_readme


def test_only_the_block_between_the_markers_is_rewritten(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    head = "# Product\n\nIntro.\n\n"
    tail = "\n\nA comment on the last run, written by hand.\n\n## Next section\n"
    readme.write_text(f"{head}{README_START}\nan old table\n{README_END}{tail}")
    section = Section("webhook", "Group messages")
    section.rows = [
        Row("group messages / bare endpoint", "0.40x", "", ">= 0.5x", "missed", summary=True),
        Row("a detail row", "12 req/s"),
    ]

    update_readme([section], datetime(2026, 12, 3, tzinfo=UTC), readme)

    text = readme.read_text()
    assert text.startswith(head + README_START)
    assert text.endswith(README_END + tail)
    block = text[len(head) : -len(tail)]
    assert "an old table" not in block
    assert "Last full run: 2026-12-03" in block
    assert "| group messages / bare endpoint | 0.40x |" in block
    assert "a detail row" not in block  # only summary rows go to the README


def test_a_readme_without_markers_is_left_alone(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Product\n")
    update_readme([Section("webhook", "Group messages")], datetime(2026, 12, 3, tzinfo=UTC), readme)
    assert readme.read_text() == "# Product\n"
