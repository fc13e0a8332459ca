"""Every hot path next to a baseline (and a peer) measured in the same run, in one command;
writes ``bench/RESULTS.md``. Ratios, never timed assertions.

    make bench                    # everything, then RESULTS.md and the README table
    .venv/bin/python bench/run.py [--only webhook,commands,...] [--quick] [--offline]
                                  [--out bench/RESULTS.md] [--readme]

Parts: webhook (group messages against a bare django-ninja endpoint, one Redis script and the
aiogram peer), peer (the product against the peer only), servers (the product, the bare and
the one-Redis-script endpoints under granian, the default, and gunicorn gthread, with the
peer), commands (/start and a button through the fake Bot API), backfill, dashboard, overview,
memory, scaleout, workarounds (each removed library workaround's revision before and after, served
side by side: ``bench/workarounds.py``), soak (the cost of a group message in Redis,
PostgreSQL and CPU: ``bench/soak.py``). ``--quick`` runs each for seconds on small sizes
(the suite runs it to keep the harness working). ``--offline`` never installs the peer's
venv (``bench/.venv-peer``, from ``bench/requirements-peer.lock``): without it the peer is
reported as not measured.

PostgreSQL and Redis: ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/tgcp_bench``)
names the server and the prefix of the databases the bench creates and drops
(``<name>_template``, ``<name>_web`` ...); ``REDIS_URL`` (default ``redis://127.0.0.1:6379/5``)
is a Redis database the bench empties after every part: it refuses one that holds keys unless
``--flush`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness, serving, soak, workarounds
from bench.harness import ROOT, Session
from bench.report import Row, Section, results_markdown, summary_rows, table

PARTS = (
    "webhook",
    "peer",
    "servers",
    "commands",
    "memory",
    "scaleout",
    "workarounds",
    "soak",
    "backfill",
    "dashboard",
    "overview",
)
# A full run measures the peer inside the webhook part, next to the baselines.
FULL_RUN = (
    "webhook",
    "servers",
    "commands",
    "memory",
    "scaleout",
    "workarounds",
    "soak",
    "backfill",
    "dashboard",
    "overview",
)
SERVED = {
    "webhook": serving.part_webhook,
    "peer": serving.part_peer,
    "servers": serving.part_servers,
    "commands": serving.part_commands,
    "memory": serving.part_memory,
    "scaleout": serving.part_scaleout,
    "workarounds": workarounds.part_workarounds,
    "soak": soak.part_soak,
}
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help=f"comma-separated parts of {', '.join(PARTS)}")
    parser.add_argument("--quick", action="store_true", help="seconds per part, small sizes")
    parser.add_argument("--offline", action="store_true", help="never install the peer's venv")
    parser.add_argument("--flush", action="store_true", help="empty a Redis database with keys")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--readme", action="store_true", help="update the README's table")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()] or list(FULL_RUN)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)}; parts: {', '.join(PARTS)}")
    database_url = os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/tgcp_bench"
    redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/5"
    if not database_url.startswith(("postgres://", "postgresql://")):
        parser.error("DATABASE_URL must be a PostgreSQL URL (the bench uses COPY and EXPLAIN)")
    held = harness.redis_keys(redis_url)
    if held and not args.flush:
        parser.error(
            f"the Redis database {redis_url} holds {held} keys; the bench empties it "
            "after every part: give it one of its own, or --flush"
        )
    harness.flush_redis(redis_url)

    session = Session(database_url, redis_url, quick=args.quick, offline=args.offline)
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    sections: list[Section] = []
    try:
        for part in PARTS:  # always in this order: memory after the serving runs
            if part not in parts:
                continue
            print(f"bench: {part} ...", flush=True)
            clock = time.monotonic()
            if part not in SERVED:  # nothing served from here on; the KV store as seeded
                session.stop_all()
                harness.flush_redis(redis_url)
            section = SERVED[part](session) if part in SERVED else data_part(session, part)
            session.shared["ran"] = True
            section.notes.append(f"Part took {time.monotonic() - clock:.0f} s.")
            sections.append(section)
            for line in table(section.rows, with_target=False)[2:]:
                print("  " + line, flush=True)
    finally:
        session.close()
    header = run_header(session, started, load_before, args.quick)
    args.out.write_text(results_markdown(sections, header))
    print(f"bench: wrote {args.out}")
    if args.readme:
        update_readme(sections, started)
    return 0


def data_part(session: Session, part: str) -> Section:
    env = session.env(session.database(part), DJANGO_SETTINGS_MODULE="bench.settings")
    argv = [sys.executable, "bench/data.py", part, *(["--quick"] if session.quick else [])]
    out = harness.run(argv, env, f"bench/data.py {part}")
    found = re.search(r"^SECTION (\{.*\})$", out, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"bench/data.py {part} printed no section:\n{out[-2000:]}")
    fields = json.loads(found.group(1))
    fields["rows"] = [Row(**row) for row in fields["rows"]]
    return Section(**fields)


def run_header(
    session: Session, started: datetime, load_before: tuple[float, ...], quick: bool
) -> list[str]:
    import django
    import psycopg
    import redis

    with psycopg.connect(harness.with_database(session.database_url, "postgres")) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    redis_version = redis.Redis.from_url(session.redis_url).info("server")["redis_version"]
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = [
        f"Python {platform.python_version()}",
        f"Django {django.get_version()}",
        f"PostgreSQL {pg}",
        f"Redis {redis_version}",
        f"gunicorn {_version('gunicorn')}",
        f"granian {_version('granian')}",
        f"django-ninja {_version('django-ninja')}",
        f"aiogram {_peer_version()}",
        _wrk_version(),
    ]
    load_after = os.getloadavg()
    return [
        f"Measured {started:%Y-%m-%d %H:%M} UTC at commit `{_commit()}` by `bench/run.py`"
        f"{' --quick (sizes and durations cut: figures are not comparable)' if quick else ''}.",
        f"Machine: {cpu}, {os.cpu_count()} cores, {memory_gb:.0f} GB, {platform.system()} "
        f"{platform.release()}; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after.",
        f"Versions: {', '.join(versions)}.",
        "",
        _load_note(load_before[0], load_after[0]),
    ]


def busy(load: float) -> bool:
    """Other work used more than half of the machine's cores."""
    return load > (os.cpu_count() or 1) / 2


def _load_note(before: float, after: float) -> str:
    if busy(before) or busy(after):
        return (
            "**Measured on a busy machine** (other work shared its cores): absolute figures "
            "are noisy; the ratios against baselines measured in the same run, alternating "
            "with them, are what to read."
        )
    return (
        "Measured on an otherwise quiet machine; the ratios against baselines measured in the "
        "same run, alternating with them, are still what to compare across machines."
    )


def update_readme(
    sections: list[Section], started: datetime, readme: Path = ROOT / "README.md"
) -> None:
    """Replace what lies between the README's bench markers (the last run's summary table);
    everything outside them, comments on a run included, is left as it is."""
    text = readme.read_text()
    if README_START not in text:
        return
    block = [
        README_START,
        f"Last full run: {started:%Y-%m-%d}, `bench/RESULTS.md` "
        f"({'busy' if busy(os.getloadavg()[0]) else 'quiet'} machine; ratios against baselines "
        "of the same run).",
        "",
        *table(summary_rows(sections)),
        README_END,
    ]
    head, rest = text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    readme.write_text(head + "\n".join(block) + tail)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


def _peer_version() -> str:
    python = harness.PEER_VENV / "bin" / "python"
    if not python.exists():
        return "(no peer venv)"
    done = subprocess.run(
        [str(python), "-c", "import aiogram; print(aiogram.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "?"


def _wrk_version() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        return "wrk missing (the closed-loop generator stands in)"
    done = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr).splitlines()[0].split(" [")[0]


def _commit() -> str:
    return harness.git_revision() or "?"


if __name__ == "__main__":
    sys.exit(main())
