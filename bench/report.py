"""What a part of ``bench/run.py`` reports, and RESULTS.md / the README table written from it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Row:
    label: str
    figure: str
    ratio: str = ""
    target: str = ""
    verdict: str = ""  # "met", "missed" or "" (no target)
    summary: bool = False  # also in the README table


@dataclass
class Section:
    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # query plans, logs: fenced text


def check(value: float, limit: float, *, below: bool) -> str:
    return "met" if (value < limit if below else value >= limit) else "missed"


def table(rows: list[Row], with_target: bool = True) -> list[str]:
    head = "| measured | figure | ratio (same run) | target | |"
    lines = [
        head if with_target else "| measured | figure | ratio (same run) |",
        "|---|---|---|---|---|" if with_target else "|---|---|---|",
    ]
    for row in rows:
        cells = [row.label, row.figure, row.ratio]
        if with_target:
            cells += [row.target, {"met": "met", "missed": "**missed**"}.get(row.verdict, "")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def results_markdown(sections: list[Section], header: list[str]) -> str:
    lines = ["# Benchmark results", "", *header, ""]
    for section in sections:
        lines += [f"## {section.title}", "", *table(section.rows), ""]
        lines += [f"- {note}" for note in section.notes]
        if section.notes:
            lines.append("")
        for detail in section.details:
            lines += ["```", detail.rstrip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def summary_rows(sections: list[Section]) -> list[Row]:
    return [row for section in sections for row in section.rows if row.summary]
