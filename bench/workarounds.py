"""The ``workarounds`` part of ``bench/run.py``: what removing each library workaround of
issue 37 cost, the revision before its removal and the removal itself served side by side in
one run, the same server settings, the same load, alternating.

Each revision is checked out into a temporary git worktree (``git worktree add --detach``,
removed at the end of the part) and served from there with this checkout's virtualenv
(``sys.executable``) by its own ``manage.py serve``, on a database migrated by its own
migrations and a Redis database of its own (one private redis-server for the part: the key
formats of revisions months apart need not agree, and the shared Redis is left alone).

The pairs are the commit that removed a workaround and its parent, so each ratio holds
everything else equal. The commits were found with ``git log --oneline -- <file>`` (the
last commit that touched the deleted file) and ``git log -S _Pinned --
telegram_bot/state/redis.py``; the part checks that each "before" still holds the file (or
the name) and each "after" does not.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness, serving
from bench.harness import ROOT, Server, Session
from bench.load import Outcome, fixed_rate
from bench.report import Row, Section

GIT = shutil.which("git") or "/usr/bin/git"
P99_RATE = 300  # the p99 target's rate (issue 37: p99 < 10 ms at 300/s)
GUNICORN_4 = (("WEB_SERVER", "gunicorn"), ("WEB_THREADS", "4"))
GRANIAN = (("WEB_SERVER", "granian"),)


@dataclass(frozen=True)
class Build:
    """A revision served with some settings (``WEB_*``; WEB_CONCURRENCY is 2 for all)."""

    revision: str  # a commit, or ``<commit>^``
    settings: tuple[tuple[str, str], ...]

    @property
    def server(self) -> str:
        name = dict(self.settings)["WEB_SERVER"]
        if name != "gunicorn":
            return name
        epoll = holds(self.revision, "config/gunicorn_worker.py")
        return f"gunicorn {'epoll worker' if epoll else 'gthread'}, 4 threads"


@dataclass(frozen=True)
class Workaround:
    name: str
    removed_in: str  # the commit that removed it; "before" is its parent
    evidence: str  # a path whose presence tells the revisions apart, or "path:name"
    kind: str  # the updates the comparison sends: "group" or "start"
    settings: tuple[tuple[str, str], ...]
    after_settings: tuple[tuple[str, str], ...] | None = None  # when the removal changed them
    why: str = ""

    @property
    def before(self) -> Build:
        return Build(f"{self.removed_in}^", self.settings)

    @property
    def after(self) -> Build:
        return Build(self.removed_in, self.after_settings or self.settings)


EPOLL = "fb57eb2"  # granian the default; the epoll worker deleted, gunicorn runs gthread
WORKAROUNDS = (
    Workaround(
        "custom gunicorn epoll worker (config/gunicorn_worker.py) -> stock gthread",
        EPOLL,
        "config/gunicorn_worker.py",
        "group",
        GUNICORN_4,
        why="both under gunicorn, 2 processes of 4 threads: only the worker class differs",
    ),
    Workaround(
        "custom gunicorn epoll worker -> granian (the new default)",
        EPOLL,
        "config/gunicorn_worker.py",
        "group",
        GUNICORN_4,
        GRANIAN,
        why="each revision's default server: what the removal gave back by changing server",
    ),
    Workaround(
        "webhook's own WSGI chain (telegram_bot/transport/wsgi.py + lifecycle.py)",
        "2aa1e03",
        "telegram_bot/transport/wsgi.py",
        "group",
        GUNICORN_4,
        why="Django's handler, request signals and the site's middleware on every delivery",
    ),
    Workaround(
        "httpx transport replacement (telegram_bot/client/transport.py)",
        "3c41a53",
        "telegram_bot/client/transport.py",
        "start",
        GUNICORN_4,
        why="/start, one sendMessage through the fake Bot API: the path the client is on "
        "(a group message makes no Bot API call)",
    ),
    Workaround(
        "hand-rendered SQL literals (telegram_bot/libpq.py)",
        "68399c1",
        "telegram_bot/libpq.py",
        "group",
        GUNICORN_4,
        why="the statistics' database add of every counted group message",
    ),
    Workaround(
        "raw per-thread Redis connections (telegram_bot/state/redis.py _Pinned)",
        "1e418a2",
        "telegram_bot/state/redis.py:_Pinned",
        "group",
        GRANIAN,
        why="every Redis command of a group message",
    ),
)


@dataclass(frozen=True)
class Sizes:
    seconds: float  # one saturation run
    rounds: int
    p99_seconds: float
    warm: bool

    @classmethod
    def of(cls, session: Session) -> Sizes:
        return cls(1, 1, 0.5, False) if session.quick else cls(5, 4, 15, True)


@dataclass
class Checkouts:
    """Worktrees of other revisions, one per commit, removed by ``close``."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tgcp-bench-wt-")))
    made: dict[str, Path] = field(default_factory=dict)

    def path(self, revision: str) -> Path:
        commit = resolve(revision)
        if commit not in self.made:
            where = self.root / commit[:10]
            git("worktree", "add", "--detach", str(where), commit)
            self.made[commit] = where
        return self.made[commit]

    def close(self) -> None:
        for where in self.made.values():
            with contextlib.suppress(subprocess.CalledProcessError):
                git("worktree", "remove", "--force", str(where))
        self.made.clear()
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(subprocess.CalledProcessError):
            git("worktree", "prune")


def git(*args: str) -> str:
    done = subprocess.run([GIT, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def resolve(revision: str) -> str:
    return git("rev-parse", "--verify", f"{revision}^{{commit}}")


def holds(revision: str, evidence: str) -> bool:
    """Whether ``revision`` has the file (``path``) or the name in it (``path:name``)."""
    path, _, name = evidence.partition(":")
    done = subprocess.run(
        [GIT, "show", f"{resolve(revision)}:{path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0 and (not name or name in done.stdout)


class Builds:
    """Each build served once, on demand; stopped when no comparison left needs it."""

    def __init__(self, session: Session, checkouts: Checkouts, redis_base: str) -> None:
        self.session, self.checkouts, self.redis_base = session, checkouts, redis_base
        self.servers: dict[Build, Server] = {}
        self.databases: dict[str, str] = {}  # commit -> its migrated database's URL
        self.redis_dbs: dict[str, int] = {}  # commit -> its Redis database

    def serve(self, build: Build) -> Server:
        if build in self.servers:
            return self.servers[build]
        commit = resolve(build.revision)
        where = self.checkouts.path(build.revision)
        redis_url = f"{self.redis_base}/{self.redis_dbs.setdefault(commit, len(self.redis_dbs))}"
        if commit not in self.databases:
            database = self.session.empty_database(f"wa_{commit[:8]}")
            env = self.session.env(database, DJANGO_SETTINGS_MODULE="config.settings",
                                   REDIS_URL=redis_url)  # fmt: skip
            argv = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
            harness.run(argv, env, f"migrate at {commit[:8]}", cwd=where)
            self.databases[commit] = database
        fake = serving.fake_api(self.session)
        port = harness.free_port()
        env = self.session.env(
            self.databases[commit],
            DJANGO_SETTINGS_MODULE="config.settings",
            REDIS_URL=redis_url,
            HOST="127.0.0.1",
            PORT=str(port),
            TELEGRAM_API_BASE_URL=fake.url(""),
        )
        env = {k: v for k, v in env.items() if not k.startswith("WEB_")}
        env.update({"WEB_CONCURRENCY": "2", **dict(build.settings)})
        label = "-".join(v for _, v in build.settings)
        name = f"wa-{commit[:8]}-{label}"
        argv = [sys.executable, "manage.py", "serve"]
        self.servers[build] = self.session.start(name, argv, env, port, cwd=where)
        return self.servers[build]

    def release(self, still_needed: set[Build]) -> None:
        for build in [b for b in self.servers if b not in still_needed]:
            self.session.stop(self.servers.pop(build))

    def close(self) -> None:
        self.release(set())


def part_workarounds(session: Session) -> Section:
    """Before/after of every removed workaround (see the module's docstring)."""
    session.stop_all()  # the other parts' servers would idle beside these
    section = Section("workarounds", "Removed library workarounds: before / after (issue 37)")
    sizes, ids = Sizes.of(session), serving.Ids()
    for workaround in WORKAROUNDS:
        check_revisions(workaround)
    # A quick run (the suite's) serves one pair, the cheapest to migrate and start: checking
    # out, migrating and serving six revisions takes minutes on two cores.
    chosen = WORKAROUNDS[-1:] if session.quick else WORKAROUNDS
    checkouts = Checkouts()
    try:
        with harness.private_redis(session, "workarounds-redis") as redis_base:
            builds = Builds(session, checkouts, redis_base)
            try:
                for n, workaround in enumerate(chosen):
                    section.rows += compare(workaround, builds, ids, sizes, section)
                    later = {b for w in chosen[n + 1 :] for b in (w.before, w.after)}
                    builds.release(later)
            finally:
                builds.close()
    finally:
        checkouts.close()
    section.notes += [
        "Each pair is the commit that removed the workaround ('after') and its parent "
        "('before'), each checked out into a temporary git worktree and served by its own "
        "`manage.py serve` with 2 web processes and the worker cluster, on a database migrated "
        "by its own migrations and a Redis database of its own (one private redis-server for "
        "the part). Everything but the workaround is the same in a pair; the pairs are not "
        "the product of today (later changes moved every figure), so read the ratios.",
        f"Saturation: {sizes.rounds} rounds of {sizes.seconds:.0f} s per build, alternating, "
        f"16 connections; the ratio is the median of each round's ratio. p99: {P99_RATE}/s "
        f"for {sizes.p99_seconds:.0f} s each, latency from each request's intended send time.",
        "A group message makes no Bot API call, so the httpx transport is measured on /start "
        "(one sendMessage to the fake Bot API, `bench/fake_api.py`).",
    ]
    if session.quick:
        section.notes.append(
            f"Quick run: only '{chosen[0].name}' served; every other pair's revisions were "
            "checked (the workaround present before, gone after) but not served."
        )
    return section


def check_revisions(workaround: Workaround) -> None:
    """The "before" holds the workaround, the "after" does not."""
    if not holds(workaround.before.revision, workaround.evidence):
        raise RuntimeError(f"{workaround.before.revision} lacks {workaround.evidence}")
    if holds(workaround.after.revision, workaround.evidence):
        raise RuntimeError(f"{workaround.after.revision} still has {workaround.evidence}")


def compare(
    workaround: Workaround, builds: Builds, ids: serving.Ids, sizes: Sizes, section: Section
) -> list[Row]:
    path = serving.GROUP_PATH
    targets = {
        side: serving.Target(f"{side}", builds.serve(build), path, workaround.kind)
        for side, build in (("before", workaround.before), ("after", workaround.after))
    }
    rates = serving.throughput(targets, ids, serving_sizes(sizes))
    p99: dict[str, Outcome] = {}
    for side, target in targets.items():
        load_ = ids.load(workaround.kind)
        p99[side] = fixed_rate(target.server.url(path), load_, P99_RATE, sizes.p99_seconds)
    ratio = serving.paired(rates, "after", "before")
    per_cpu = rates["after"]["per_cpu"] / rates["before"]["per_cpu"]
    kind = "group messages" if workaround.kind == "group" else "/start"
    before, after = rates["before"], rates["after"]
    errors = before["errors"] + after["errors"] + p99["before"].errors + p99["after"].errors
    section.details.append(
        f"{workaround.name}: before {workaround.before.revision} "
        f"({workaround.before.server}), after {workaround.after.revision} "
        f"({workaround.after.server}); {workaround.why}.\n"
        f"  rounds (updates/s) before: {', '.join(f'{r:.0f}' for r in before['rounds'])}\n"
        f"  rounds (updates/s) after:  {', '.join(f'{r:.0f}' for r in after['rounds'])}\n"
        f"  server CPU per update (ms): before {before['ms_per_request']['server']:.3f}, "
        f"after {after['ms_per_request']['server']:.3f}\n"
        f"  {P99_RATE}/s: before p50 {p99['before'].p50_ms:.1f} ms p99 "
        f"{p99['before'].p99_ms:.1f} ms, after p50 {p99['after'].p50_ms:.1f} ms p99 "
        f"{p99['after'].p99_ms:.1f} ms; errors (non-200) in the comparison: {errors}"
    )
    overloaded = " (overloaded)" if p99["before"].overloaded or p99["after"].overloaded else ""
    return [
        Row(
            f"{workaround.name}: {kind}/s before / after",
            f"{before['rate']:.0f} / {after['rate']:.0f} updates/s",
            f"after/before {ratio:.2f}x; {per_cpu:.2f}x per server CPU-s",
        ),
        Row(
            f"{workaround.name}: p99 at {P99_RATE}/s before / after",
            f"{p99['before'].p99_ms:.1f} / {p99['after'].p99_ms:.1f} ms{overloaded}",
            f"after/before {p99['after'].p99_ms / max(p99['before'].p99_ms, 0.01):.2f}x",
        ),
    ]


def serving_sizes(sizes: Sizes) -> serving.Sizes:
    return serving.Sizes(sizes.seconds, sizes.rounds, sizes.p99_seconds, sizes.p99_seconds,
                         sizes.warm)  # fmt: skip
