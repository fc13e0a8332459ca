"""The benchmark harness keeps working: ``bench/run.py --quick`` runs every part against real
PostgreSQL and a private Redis and writes every row of RESULTS.md. Rows are asserted, never a
time (figures are the bench's business, as ratios in one run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from bench import load, serving, soak, workarounds
from bench.harness import with_database
from moderation.models import ChatSettings
from telegram_bot.updates import parse_update_json
from tests.redis_server import private_redis

ROOT = Path(__file__).resolve().parents[2]
# A full run's parts but those that serve other revisions or soak (each has a test below).
PARTS = ["webhook", "servers", "commands", "memory", "scaleout", "backfill", "dashboard"]
DATABASE_URL = os.environ.get("DATABASE_URL", "")
SECTIONS = [
    "Group messages through the webhook",
    "The web server: granian (default) or gunicorn gthread",
    "Commands through the fake Bot API",
    "Memory",
    "Scale-out sketch",
    "Backfill",
    "Dashboard and overview",
]
ROWS = [
    "bare django-ninja endpoint: saturation",
    "endpoint running one Redis script: saturation",
    "group message through the webhook: saturation",
    "group messages / bare endpoint",
    "group message, KV store only (no database add): saturation",
    "group messages / the same without the database add",
    "group message, 2,000 senders all flooding (each muted once in 10 s): saturation",
    "group messages, all senders flooding / none flooding",
    "group message through the webhook: 100/s fixed rate",
    "group message through the webhook: 1000/s fixed rate",
    "group messages: p99 at 300/s",
    "granian: group message through the webhook: saturation",
    "granian: endpoint running one Redis script: saturation",
    "gunicorn gthread: group message through the webhook: saturation",
    "gunicorn gthread: bare django-ninja endpoint: saturation",
    "granian: group messages / bare endpoint",
    "gunicorn gthread: group messages / bare endpoint",
    "granian: group messages / one Redis script (the floor)",
    "gunicorn gthread: group messages / one Redis script (the floor)",
    "granian: one Redis script / bare endpoint",
    "gunicorn gthread: one Redis script / bare endpoint",
    "group messages: granian / gunicorn gthread",
    "bare endpoint: granian / gunicorn gthread",
    "granian: web worker, resident (after the runs)",
    "gunicorn gthread: web worker, resident (after the runs)",
    "fake Bot API: one sendMessage round trip",
    "/start (sendMessage) / bare endpoint",
    "panel button (editMessageText, answer in the webhook reply) / bare endpoint",
    "/start (sendMessage): 300/s fixed rate",
    "web worker (granian process), resident",
    "web worker, proportional set size (shared library pages divided)",
    "worker cluster (qcluster and its processes), resident",
    "one web process, direct",
    "two web processes / one (both behind the proxy)",
    "plain COPY of the same rows (baseline)",
    "backfill / COPY",
    "COUNT(*) over the same",
    "/api/v1/stats/report",
    "admin index (the overview)",
]


@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_quick_run_writes_every_row(tmp_path: Path) -> None:
    if not DATABASE_URL.startswith("postgres"):
        pytest.skip("the bench needs DATABASE_URL pointing at PostgreSQL")
    name = DATABASE_URL.rsplit("/", 1)[1].split("?")[0]
    out = tmp_path / "RESULTS.md"
    with private_redis() as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "DATABASE_URL": with_database(DATABASE_URL, f"{name}_benchq"),
        }
        done = subprocess.run(
            [
                sys.executable,
                "bench/run.py",
                "--quick",
                "--offline",
                "--only",
                ",".join(PARTS),
                "--out",
                str(out),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=880,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    text = out.read_text()
    assert "Machine:" in text and "Versions:" in text and "busy machine" in text
    for section in SECTIONS:
        assert f"\n## {section}\n" in text, section
    cpu = text.split("CPU per request at saturation", 1)[1].split("```", 1)[0]
    for target in ("bare django-ninja endpoint", "group message through the webhook"):
        line = next(line for line in cpu.splitlines() if line.strip().startswith(target))
        server, postgres, redis, generator, total = map(float, line.split()[-5:])
        assert server > 0 and generator > 0, line
        assert abs(total - (server + postgres + redis + generator)) < 0.01, line
    for label in ROWS:
        row = next((line for line in text.splitlines() if line.startswith(f"| {label}")), None)
        assert row is not None, label
        figure = row.split(" | ")[1]
        assert re.search(r"\d", figure), row
    peer_row = "| aiogram 3 peer (same counting): saturation" in text
    assert peer_row or "aiogram peer not measured" in text
    if peer_row:  # each server's group messages against the peer, in the servers part
        head = "\n## The web server: granian (default) or gunicorn gthread\n"
        servers = text.split(head, 1)[1].split("\n## ")[0]
        for server in ("granian", "gunicorn gthread"):
            assert f"| {server}: group messages / aiogram peer | " in servers, server


@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_quick_workarounds_part_serves_a_pair_and_leaves_no_worktree(tmp_path: Path) -> None:
    """The workarounds part checks out the revisions before and after a removal into git
    worktrees of its own, serves them and removes the worktrees; its quick run serves one
    pair (the six take minutes) and checks the others' revisions."""
    if not DATABASE_URL.startswith("postgres"):
        pytest.skip("the bench needs DATABASE_URL pointing at PostgreSQL")
    name = DATABASE_URL.rsplit("/", 1)[1].split("?")[0]
    out = tmp_path / "RESULTS.md"
    with private_redis() as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "DATABASE_URL": with_database(DATABASE_URL, f"{name}_benchw"),
        }
        argv = [sys.executable, "bench/run.py", "--quick", "--offline", "--only", "workarounds"]
        done = subprocess.run(
            [*argv, "--out", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=880,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    text = out.read_text()
    assert "\n## Removed library workarounds: before / after (issue 37)\n" in text
    served = workarounds.WORKAROUNDS[-1].name
    for label in (f"{served}: group messages/s before / after", f"{served}: p99 at 300/s"):
        row = next((line for line in text.splitlines() if line.startswith(f"| {label}")), None)
        assert row is not None, label
        assert re.search(r"\d+ / \d+", row.split(" | ")[1]), row
        assert "after/before" in row, row
    assert "Quick run: only" in text
    listed = subprocess.run(
        ["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "tgcp-bench-wt-" not in listed.stdout


@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_quick_soak_prints_the_cost_of_a_message_per_phase(tmp_path: Path) -> None:
    """The soak part prints, per phase (chats, members, text stored), Redis bytes and keys,
    PostgreSQL bytes and the CPU of the web, worker, Redis and database per message, with
    Redis's keys by shape."""
    if not DATABASE_URL.startswith("postgres"):
        pytest.skip("the bench needs DATABASE_URL pointing at PostgreSQL")
    name = DATABASE_URL.rsplit("/", 1)[1].split("?")[0]
    out = tmp_path / "RESULTS.md"
    with private_redis() as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "DATABASE_URL": with_database(DATABASE_URL, f"{name}_benchs"),
        }
        argv = [sys.executable, "bench/run.py", "--quick", "--offline", "--only", "soak"]
        done = subprocess.run(
            [*argv, "--out", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=580,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    text = out.read_text()
    assert "\n## Cost per message (soak, issue 45)\n" in text
    keys: dict[str, float] = {}
    for phase in [soak.baseline(quick=True), *soak.phases(quick=True)]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {phase.label}:"))
        # Redis's used_memory may fall over a short phase (a key table's rehash ends, short
        # keys expire): its sign is a measurement, the keys each message adds are not.
        found = re.search(r"Redis (-?\d+) B, ([\d.]+) keys; PostgreSQL (\d+) B", row)
        assert found is not None, row
        assert float(found.group(2)) > 0, row
        assert int(found.group(3)) > 0, row
        keys[phase.label] = float(found.group(2))
        assert re.search(r"web [\d.]+, worker [\d.]+, Redis [\d.]+, PostgreSQL [\d.]+", row)
    # The before and after of issue 45 item 1 in the same run: the compact layout's done-markers
    # and buffer entries are packed (a group of 100 a Redis key), the legacy layout's are not.
    before, after = soak.baseline(quick=True), soak.phases(quick=True)[0]
    assert keys[after.label] <= keys[before.label] - 1.5, keys
    shapes = text.split("Redis keys of the warm-up and the main soak (", 1)[1].split("```")[0]
    # Keys carry the bot's id after their family (STATE_KEYS_BY_BOT): ``upd:<bot>:d:<group>``.
    assert "upd:#:d:##" in shapes and "msg:#:-#:##" in shapes and "stats.count" not in shapes
    legacy = text.split(f"Redis keys of the warm-up and the {before.label}", 1)[1]
    legacy = legacy.split("```")[0]
    assert "upd:#:#:stats.count" in legacy and "msg:#:-#:#:#" in legacy


@pytest.mark.parametrize("kind", ["group", "start", "callback"])
def test_load_bodies_are_updates_with_unique_ids(kind: str) -> None:
    shape = load.Load(kind, 7_000_000_000, 5 if kind == "callback" else 200, 1000, "s")
    updates = [parse_update_json(load.body(shape, n)) for n in range(50)]
    assert len({update.update_id for update in updates}) == 50
    if kind == "group":
        assert all(u.message and u.message.chat.type == "supergroup" for u in updates)
    elif kind == "start":
        assert all(u.message and u.command() is not None for u in updates)
    else:  # a message a press, then the other view: Telegram refuses a same-content edit
        presses = [u.callback_query for u in updates]
        assert all(p and p.data in ("panel:home", "panel:admins") and p.message for p in presses)
        for n, press in enumerate(presses[:-10]):
            again = presses[n + 10]  # Load(users=5): 10 messages, then the same ones again
            assert press.message.message_id == again.message.message_id
            assert press.data != again.data


def _sent_in_one_window(shape: load.Load, rate: int) -> Counter[tuple[int, int]]:
    """How many messages each sender sends in its chat in 10 s of wrk's two threads at
    ``rate`` (thread t's ids start ``t * 100,000,000`` past the load's first, as updates.lua's)."""
    per_thread = rate * 10 // 2
    sent: Counter[tuple[int, int]] = Counter()
    for thread in range(2):
        wrk_thread = replace(shape, first=shape.first + thread * 100_000_000)
        for n in range(1, per_thread + 1):
            message = json.loads(load.body(wrk_thread, n))["message"]
            sent[message["chat"]["id"], message["from"]["id"]] += 1
    return sent


def test_the_group_load_keeps_every_sender_under_the_flood_limit() -> None:
    """The peer only counts: the product's group load must not be its moderation path. At
    twice the fastest rate measured, no sender passes the default limit (8 in 10 s); the
    flooding load, at the product's rate, makes every sender pass it."""
    limit = ChatSettings().flood_messages
    assert ChatSettings().flood_seconds == 10
    assert max(_sent_in_one_window(serving.Ids().load("group"), 5_000).values()) <= limit
    flooding = _sent_in_one_window(serving.Ids().load("group", serving.FLOODING_SENDERS), 2_000)
    assert len(flooding) == serving.FLOODING_SENDERS
    assert min(flooding.values()) > limit


@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_quick_overview_part_times_the_overview_against_its_baseline(tmp_path: Path) -> None:
    """The overview with 5 chats (``bench/data.py overview``): the admin index and "Today by
    chat", each against an admin page that reads nothing, measured in the same run."""
    if not DATABASE_URL.startswith("postgres"):
        pytest.skip("the bench needs DATABASE_URL pointing at PostgreSQL")
    name = DATABASE_URL.rsplit("/", 1)[1].split("?")[0]
    out = tmp_path / "RESULTS.md"
    with private_redis() as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "DATABASE_URL": with_database(DATABASE_URL, f"{name}_benchov"),
        }
        argv = [sys.executable, "bench/run.py", "--quick", "--offline", "--only", "overview"]
        done = subprocess.run(
            [*argv, "--out", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=580,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    text = out.read_text()
    assert "\n## Overview with a year of 5 chats\n" in text
    for label in ("admin index (the overview's cards)", "today by chat"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
        assert re.search(r"\d+ ms, \d+ queries", row) and "x baseline" in row, row
        assert "< 100 ms" in row, row
