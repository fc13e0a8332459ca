"""The parts of ``bench/run.py`` that load servers over HTTP: group messages (with the bare and
the Redis-script baselines and the aiogram peer), commands through the fake Bot API, memory,
and the scale-out sketch.

The product is served as the README recommends: ``manage.py serve`` with the web server's
defaults (granian, 2 processes, threads started on demand; ``config/web.py``) and the django-q2
worker cluster beside it, with ``bench.settings`` (the product's settings plus the baseline
endpoints' URLs).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness, load
from bench.harness import OWNER, SECRET, TOKEN, CpuWatch, Server, Session
from bench.load import Load, Outcome, fixed_rate, saturate
from bench.report import Row, Section, check

RATES = (100, 300, 1000)
# The rate of the p99 target, measured longer: at 300/s for 8 s, one stall of the machine of
# 80 ms (a WAL sync on a shared disk, seen) is a percent of the sample and the whole p99.
TARGET_RATE = 300
# The owner's messages in the fake whose buttons the callbacks press, one a press (Ids):
# enough for the commands part's callback runs at up to 250 presses/s.
CALLBACK_MESSAGES = 45_000
CALLBACK_MESSAGES_QUICK = 3_000


@dataclass(frozen=True)
class Sizes:
    seconds: float  # one saturation run
    rounds: int  # saturation rounds, alternating the targets
    fixed_seconds: float  # one fixed-rate run
    target_seconds: float  # the run at TARGET_RATE, whose p99 has a target
    warm: bool  # a second of load on every server before measuring

    @classmethod
    def of(cls, session: Session) -> Sizes:
        return cls(1, 1, 0.5, 0.5, False) if session.quick else cls(6, 5, 8, 30, True)


KV_ONLY = "group message, KV store only (no database add)"
REDIS_SCRIPT = "endpoint running one Redis script"
DEFAULT_SERVER = "granian"  # the product's default (config/settings.py); the servers part's
GUNICORN = "gunicorn gthread"  # the choice, WEB_SERVER=gunicorn
GROUP_PATH = "/telegram/webhook"
# Group senders of a load, spread so that none goes over the anti-flood limit (by default more
# than 8 messages in 10 s mutes): a sender's messages come every GROUP_SENDERS / rate seconds,
# 2.5 in a window at 5,000/s, twice the fastest rate measured. The group path is then the
# counting the aiogram peer does, with the product's flood counter but no mute.
GROUP_SENDERS = 20_000
# The same load with every sender flooding: 2,000 senders at the product's 2,000-2,500/s send
# 10-12 messages each per 10 s window, so one message in 9 or 10 mutes its sender (the
# moderation path: an audit row and a Bot API call each).
FLOODING_SENDERS = 2_000
FLOODING = f"group message, {FLOODING_SENDERS:,} senders all flooding (each muted once in 10 s)"


# -- servers --------------------------------------------------------------------------------
def fake_api(session: Session) -> Server:
    def start() -> Server:
        port = harness.free_port()
        messages = str(CALLBACK_MESSAGES_QUICK if session.quick else CALLBACK_MESSAGES)
        argv = [sys.executable, "bench/fake_api.py", str(port), messages]
        return session.start("fake-bot-api", argv, session.env("sqlite://"), port, None)

    return session.once("fake", start)


def product(session: Session) -> Server:
    """The product as ``make run`` serves it (the default web server + worker), started once
    per run."""
    return session.once("product", lambda: serve(session, "product", session.database("web"), "2"))


def product_kv_only(session: Session) -> Server:
    """The product with group messages counted in the KV store only (``bench/kv_only.py``):
    what the database add costs, measured beside it. Its own database, the same Redis."""
    return session.once(
        "kv_only",
        lambda: serve(
            session, "product-kv-only", session.database("kvonly"), "2", "bench.settings_kv_only"
        ),
    )


def serve(
    session: Session,
    name: str,
    database_url: str,
    web_processes: str,
    settings: str = "bench.settings",
    server: str | None = None,
    redis_url: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> Server:
    """``manage.py serve`` with ``web_processes`` web processes and the web server's own
    defaults (threads and the rest: no ``WEB_*`` of the shell); ``server`` sets WEB_SERVER,
    ``redis_url`` another Redis than the run's, ``extra_env`` more settings. Its processes
    import only what ``requirements.lock`` installs (``harness.production_only_env``)."""
    fake = fake_api(session)
    port = harness.free_port()
    env = session.env(
        database_url,
        DJANGO_SETTINGS_MODULE=settings,
        HOST="127.0.0.1",
        PORT=str(port),
        TELEGRAM_API_BASE_URL=fake.url(""),
        REDIS_URL=redis_url or session.redis_url,
    )
    env = {k: v for k, v in env.items() if not k.startswith("WEB_")}
    env["WEB_CONCURRENCY"] = web_processes
    if server is not None:
        env["WEB_SERVER"] = server
    env.update(extra_env or {})
    env = harness.production_only_env(env)  # what the image installs: no dev tools' packages
    argv = [sys.executable, "manage.py", "serve"]
    return session.start(name, argv, env, port)


def product_gunicorn(session: Session) -> Server:
    """The product served with ``WEB_SERVER=gunicorn`` (gunicorn's gthread worker with its
    default 4 threads, ``config/web.py``) and its worker cluster, on its own database: the
    ``servers`` part's second server."""

    def start() -> Server:
        database = session.database("gunicorn")
        return serve(session, "product-gunicorn", database, "2", server="gunicorn")

    return session.once("gunicorn", start)


def peer(session: Session) -> Server | str:
    """The aiogram peer, or why it is not running."""
    return session.once("peer", lambda: _start_peer(session))


def _start_peer(session: Session) -> Server | str:
    python = harness.PEER_VENV / "bin" / "python"
    missing = not _peer_ready(python)
    if missing and session.offline:
        return f"not measured: no {harness.PEER_VENV.name} (offline run)"
    if missing:
        _peer_install()
    port = harness.free_port()
    argv = [
        str(python),
        "bench/peer_aiogram.py",
        "--port",
        str(port),
        "--redis",
        session.redis_url,
        "--secret",
        SECRET,
    ]
    return session.start("peer-aiogram", argv, dict(os.environ), port, None)


def _peer_ready(python: object) -> bool:
    if not Path(str(python)).exists():
        return False
    check_import = [str(python), "-c", "import aiogram, aiohttp, redis"]
    return subprocess.run(check_import, capture_output=True, check=False).returncode == 0


def _peer_install() -> None:
    venv = str(harness.PEER_VENV)
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    subprocess.run(
        [
            f"{venv}/bin/python",
            "-m",
            "pip",
            "install",
            "-q",
            "--require-hashes",
            "-r",
            str(harness.PEER_LOCK),
        ],
        check=True,
    )


def handler_failures(server: Server) -> int:
    """Updates the server's pipeline logged as failed in a handler (each one a dead letter)."""
    log = harness.LOGS / f"{server.name}.log"
    return log.read_text(errors="replace").count("handler failed") if log.exists() else 0


def failure_row(server: Server, before: int) -> Row:
    failed = handler_failures(server) - before
    label = "updates failed in a handler (dead letters) during the part"
    return Row(label, str(failed), "", "0", check(failed, 1, below=True))


def web_pids(server: Server) -> list[int]:
    """The web server's processes of a ``serve``: granian's or gunicorn's main process and
    workers (the peer: its process)."""
    return _child_tree(server, "granian") or _child_tree(server, "gunicorn") or server.pids()


def web_server_name(server: Server) -> str:
    """Which web server a ``serve`` runs: granian or gunicorn."""
    return "gunicorn" if _child_tree(server, "gunicorn") else "granian"


def worker_pids(server: Server) -> list[int]:
    return _child_tree(server, "qcluster")


def _child_tree(server: Server, word: str) -> list[int]:
    for pid in server.pids()[1:]:
        if word in harness.command_line(pid):
            return harness.descendants(pid)
    return []


# -- measuring ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    label: str
    server: Server
    path: str
    kind: str = "group"
    senders: int = GROUP_SENDERS  # group messages' senders


class Ids:
    """Update ids unique within the run (wrk's threads split each block further), and the
    fake's messages each callback run presses buttons on (a range of its own)."""

    def __init__(self) -> None:
        self.block = (int(time.time()) % 100_000) * 10**10
        self.message = 1

    def load(self, kind: str, users: int = GROUP_SENDERS) -> Load:
        """``users``: group senders; for callbacks, the messages each of wrk's two threads
        (or the fixed-rate generator, twice as many) presses."""
        self.block += 10**9
        first_message = self.message
        if kind == "callback":
            self.message += 2 * users
        return Load(kind, self.block, users, OWNER, SECRET, first_message)


def throughput(targets: dict[str, Target], ids: Ids, sizes: Sizes) -> dict[str, dict[str, Any]]:
    """Median rate at saturation per target over alternating rounds, and per CPU-second of
    the target's own server processes."""
    runs: dict[str, list[tuple[Outcome, dict[str, float]]]] = {name: [] for name in targets}
    for target in targets.values() if sizes.warm else ():  # imports, connections, caches
        saturate(target.server.url(target.path), _load(ids, target, 250), 1)
    for _ in range(sizes.rounds):
        for name, target in targets.items():
            pids = web_pids(target.server)
            before = _cpu_by_process_kind(pids)
            outcome = saturate(target.server.url(target.path), _load(ids, target), sizes.seconds)
            after = _cpu_by_process_kind(pids)
            runs[name].append((outcome, {kind: after[kind] - before[kind] for kind in after}))
    result = {}
    for name, outcomes in runs.items():
        result[name] = {
            "rounds": [o.rate for o, _ in outcomes],
            "rate": statistics.median(o.rate for o, _ in outcomes),
            "per_cpu": statistics.median(
                o.requests / max(c[CPU_KINDS[0]], 1e-3) for o, c in outcomes
            ),
            "ms_per_request": {
                kind: statistics.median(1000 * c[kind] / max(o.requests, 1) for o, c in outcomes)
                for kind in CPU_KINDS
            },
            "errors": sum(o.errors for o, _ in outcomes),
            "tool": outcomes[0][0].tool,
        }
    return result


CPU_KINDS = ("server", "PostgreSQL", "Redis", "load generator")


def _cpu_by_process_kind(server_pids: list[int]) -> dict[str, float]:
    """CPU seconds so far of the target's server processes, every PostgreSQL and Redis process
    of the machine, and the load generator (wrk: this process's waited-for children)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "server": harness.cpu_seconds(server_pids),
        "PostgreSQL": harness.cpu_seconds(harness.named("postgres")),
        "Redis": harness.cpu_seconds(harness.named("redis-server")),
        "load generator": sum(
            u.ru_utime + u.ru_stime for u in (children, own)
        ),  # the closed-loop generator, without wrk, runs in this process
    }


def cpu_detail(targets: dict[str, Target], rates: dict[str, dict[str, Any]]) -> str:
    """Where the machine's CPU goes per request at saturation, by kind of process."""
    head = f"  {'':<58}" + "".join(f"{kind:>16}" for kind in (*CPU_KINDS, "total"))
    lines = [head]
    for name, target in targets.items():
        ms = rates[name]["ms_per_request"]
        cells = [ms[kind] for kind in CPU_KINDS]
        lines.append(f"  {target.label:<58}" + "".join(f"{v:16.3f}" for v in (*cells, sum(cells))))
    return (
        "CPU per request at saturation (ms, median over rounds; PostgreSQL and Redis: every "
        "process of the machine, other work included):\n" + "\n".join(lines)
    )


def latencies(targets: dict[str, Target], ids: Ids, sizes: Sizes) -> dict[tuple[str, int], Outcome]:
    found = {}
    for rate in RATES:
        for name, target in targets.items():
            url = target.server.url(target.path)
            seconds = sizes.target_seconds if rate == TARGET_RATE else sizes.fixed_seconds
            presses = rate * seconds / 2
            load_ = _load(ids, target, presses)
            found[name, rate] = fixed_rate(url, load_, rate, seconds)
    return found


def _load(ids: Ids, target: Target, presses: float = 2000) -> Load:
    """Presses per wrk thread of a saturation run, or half a fixed-rate run's."""
    return ids.load(target.kind, int(presses) + 1 if target.kind == "callback" else target.senders)


def paired(rates: dict[str, dict[str, Any]], name: str, base: str) -> float:
    """The median over rounds of ``name``'s rate over ``base``'s in the same round: the two
    ran seconds apart, so a machine whose speed drifts over minutes (other work on its cores)
    moves both alike, where a ratio of medians would pair different moments."""
    pairs = zip(rates[name]["rounds"], rates[base]["rounds"], strict=True)
    return statistics.median(mine / theirs for mine, theirs in pairs if theirs)


def ratio_row(
    label: str,
    rates: dict[str, dict[str, Any]],
    name: str,
    base: str,
    at_least: float | None = None,
    target: str = "",
) -> Row:
    """``name``'s rate over ``base``'s (paired rounds) and per server CPU-s; with
    ``at_least``, a target row that is also in the README's table."""
    ratio = paired(rates, name, base)
    per_cpu = rates[name]["per_cpu"] / rates[base]["per_cpu"]
    if at_least is None:
        return Row(label, f"{ratio:.2f}x", f"{per_cpu:.2f}x per server CPU-s")
    verdict = check(ratio, at_least, below=False)
    return Row(
        label, f"{ratio:.2f}x", f"{per_cpu:.2f}x per server CPU-s", target, verdict, summary=True
    )


def rate_rows(targets: dict[str, Target], rates: dict[str, dict[str, Any]], base: str) -> list[Row]:
    rows = []
    for name, target in targets.items():
        figures = rates[name]
        ratio = (
            ""
            if name == base
            else (
                f"{paired(rates, name, base):.2f}x {targets[base].label}; "
                f"{figures['per_cpu'] / rates[base]['per_cpu']:.2f}x per server CPU-s"
            )
        )
        errors = f", {figures['errors']:.0f} errors" if figures["errors"] else ""
        rows.append(
            Row(
                f"{target.label}: saturation ({figures['tool']})",
                f"{figures['rate']:.0f} req/s ({figures['per_cpu']:.0f} per server CPU-s){errors}",
                ratio,
            )
        )
    return rows


def latency_rows(targets: dict[str, Target], found: dict[tuple[str, int], Outcome]) -> list[Row]:
    rows = []
    for (name, rate), outcome in found.items():
        errors = f", {outcome.errors} errors" if outcome.errors else ""
        overloaded = "overloaded: " if outcome.overloaded else ""
        rows.append(
            Row(
                f"{targets[name].label}: {rate}/s fixed rate",
                f"{overloaded}p50 {outcome.p50_ms:.1f} ms, p99 {outcome.p99_ms:.1f} ms "
                f"({outcome.rate:.0f}/s done{errors})",
            )
        )
    return rows


# -- parts ----------------------------------------------------------------------------------
def part_webhook(session: Session, with_baselines: bool = True) -> Section:
    """Group messages against the bare endpoint, one Redis script and the aiogram peer."""
    sizes, ids, server = Sizes.of(session), Ids(), product(session)
    failures = handler_failures(server)
    targets = {}
    if with_baselines:
        targets["bare"] = Target("bare django-ninja endpoint", server, "/bench/bare")
        targets["redis"] = Target(REDIS_SCRIPT, server, "/bench/redis")
    targets["product"] = Target("group message through the webhook", server, "/telegram/webhook")
    if with_baselines:
        targets["kv_only"] = Target(KV_ONLY, product_kv_only(session), "/telegram/webhook")
        flooding = Target(FLOODING, server, GROUP_PATH, senders=FLOODING_SENDERS)
        # Its senders are the product load's first 2,000; the peer's, the bare endpoint's and
        # the Redis script's runs come before the product's next one, so their 10 s windows
        # have ended by then.
        targets["flooding"] = flooding
    section = Section(
        "webhook" if with_baselines else "peer",
        "Group messages through the webhook" if with_baselines else "The aiogram peer",
    )
    aiogram = peer(session)
    if isinstance(aiogram, Server):
        targets["peer"] = Target("aiogram 3 peer (same counting)", aiogram, "/telegram/webhook")
    else:
        section.notes.append(f"aiogram peer {aiogram}")
    rates = throughput(targets, ids, sizes)
    found = latencies({k: v for k, v in targets.items() if k != "flooding"}, ids, sizes)
    base = "bare" if with_baselines else "product"
    section.rows += rate_rows(targets, rates, base)
    section.details.append(cpu_detail(targets, rates))
    if with_baselines:
        section.rows.append(
            ratio_row("group messages / bare endpoint", rates, "product", "bare", 0.5, ">= 0.5x")
        )
    if "peer" in targets:
        section.rows.append(
            ratio_row("group messages / aiogram peer", rates, "product", "peer", 1.0001, "> 1x")
        )
    if "kv_only" in targets:
        label = "group messages / the same without the database add"
        section.rows.append(ratio_row(label, rates, "product", "kv_only"))
    if "flooding" in targets:
        label = "group messages, all senders flooding / none flooding"
        section.rows.append(ratio_row(label, rates, "flooding", "product"))
    section.rows += latency_rows(targets, found)
    p99 = found["product", 300].p99_ms
    section.rows.append(
        Row(
            "group messages: p99 at 300/s",
            f"{p99:.1f} ms",
            "",
            "< 25 ms",
            check(p99, 25, below=True),
            summary=True,
        )
    )
    section.rows.append(failure_row(server, failures))
    section.notes += [
        f"Served by `manage.py serve` (the web server's defaults: {DEFAULT_SERVER}, 2 processes, "
        f"threads started as requests wait; and the worker cluster), PostgreSQL and Redis; "
        f"saturation: {sizes.rounds} rounds of "
        f"{sizes.seconds:.0f} s per target, alternating; figures are medians, ratios the "
        "median of each round's ratio (the two measured seconds apart); wrk -t2 -c16.",
        "Per server CPU-s: requests divided by the CPU time the target's own server processes "
        "used (the web server's processes; the peer's process), which other work on the "
        "machine does not "
        "inflate. The aiogram peer is one asyncio process, as its documentation runs it.",
        f"Fixed rates: {sizes.fixed_seconds:.0f} s each ({TARGET_RATE}/s, the rate of the p99 "
        f"target: {sizes.target_seconds:.0f} s), latency from each request's intended "
        "send time (no coordinated omission); 'overloaded': the run stopped sending once "
        f"{load.BACKLOG_SECONDS:.0f} s of requests waited for answers (the server cannot "
        "keep that rate).",
        f"'{KV_ONLY}': the same server with the live writer's database add taken out "
        "(`bench/kv_only.py`: the claim, the KV commit and its done-marker as the product "
        "does them); an experiment that measures what the add costs, never a mode of the "
        "product, whose statistics' guarantees need the add (stats/README.md, Ordering).",
        f"Group messages come from {GROUP_SENDERS:,} senders in 5 chats, none over the "
        "anti-flood limit (more than 8 messages in 10 s): the counting the peer does, with the "
        f"product's flood counter. '{FLOODING}': saturation only, to show what the moderation "
        "path adds (one message in 9 or 10 mutes its sender: an audit row and a Bot API call).",
    ]
    return section


def part_peer(session: Session) -> Section:
    return part_webhook(session, with_baselines=False)


def part_servers(session: Session) -> Section:
    """The product, the bare endpoint and the one-Redis-script endpoint under the default web
    server (granian) and under ``WEB_SERVER=gunicorn`` (stock gthread), with the aiogram peer,
    alternating in one run: what the web server costs each request, and how far the group
    message is from the floor of any idempotent counter served the same way."""
    sizes, ids, server = Sizes.of(session), Ids(), product(session)
    other = product_gunicorn(session)
    section = Section("servers", f"The web server: {DEFAULT_SERVER} (default) or {GUNICORN}")
    servers = ((DEFAULT_SERVER, "", server), (GUNICORN, "gunicorn_", other))
    targets = {}
    for name, key, served in servers:
        targets[f"{key}bare"] = Target(f"{name}: bare django-ninja endpoint", served, "/bench/bare")
        targets[f"{key}redis"] = Target(f"{name}: {REDIS_SCRIPT}", served, "/bench/redis")
        targets[f"{key}group"] = Target(f"{name}: group message through the webhook", served,
                                        GROUP_PATH)  # fmt: skip
    aiogram = peer(session)
    if isinstance(aiogram, Server):
        targets["peer"] = Target("aiogram 3 peer (same counting)", aiogram, GROUP_PATH)
    else:
        section.notes.append(f"aiogram peer {aiogram}")
    rates = throughput(targets, ids, sizes)
    section.rows += rate_rows(targets, rates, "group")
    section.details.append(cpu_detail(targets, rates))
    # Each server's group messages against its own bare endpoint, its own one-Redis-script
    # endpoint (the floor: a claim and an add, one round trip, served the same way) and the
    # peer (paired rounds, as in the webhook part); the targets are the default server's.
    for name, key, _ in servers:
        default = name == DEFAULT_SERVER
        label = f"{name}: group messages / bare endpoint"
        section.rows.append(ratio_row(label, rates, f"{key}group", f"{key}bare"))
        label = f"{name}: group messages / one Redis script (the floor)"
        floor = (0.6, ">= 0.6x") if default else (None, "")
        section.rows.append(ratio_row(label, rates, f"{key}group", f"{key}redis", *floor))
        label = f"{name}: one Redis script / bare endpoint"
        section.rows.append(ratio_row(label, rates, f"{key}redis", f"{key}bare"))
        if "peer" in targets:
            label = f"{name}: group messages / aiogram peer"
            against_peer = (1.2501, "> 1.25x") if default else (None, "")
            section.rows.append(ratio_row(label, rates, f"{key}group", "peer", *against_peer))
    for kind, key in (("group messages", "group"), ("bare endpoint", "bare")):
        label = f"{kind}: {DEFAULT_SERVER} / {GUNICORN}"
        section.rows.append(ratio_row(label, rates, key, f"gunicorn_{key}"))
    for name, _, served in servers:
        resident = [harness.rss_mb(pid) for pid in web_pids(served)[1:]]  # not the main process
        section.rows.append(
            Row(
                f"{name}: web worker, resident (after the runs)",
                f"{max(resident, default=0.0):.0f} MB",
                ", ".join(f"{mb:.0f}" for mb in resident) + " MB",
            )
        )
    section.notes += [
        "Both served by `manage.py serve` with 2 processes, each server's own defaults "
        f"(`config/web.py`: {DEFAULT_SERVER} starts threads as requests wait, up to 128 a "
        f"process; {GUNICORN}, `WEB_SERVER=gunicorn`, runs 4 a process) and a worker cluster, "
        f"each on a database of its own. The '{REDIS_SCRIPT}' endpoint is the floor of any "
        "idempotent counter served the same way (a claim of the update id and an add, in one "
        "round trip). "
        f"Saturation only: {sizes.rounds} rounds of {sizes.seconds:.0f} s per target, "
        "alternating; ratios the median of each round's ratio; wrk -t2 -c16.",
        "Removed workaround: gunicorn's epoll worker (`config/gunicorn_worker.py`) bought "
        "1.09x-1.13x over stock gthread (runs up to 2026-12-06, `bench/RESULTS.md` of then); "
        "the `workarounds` part serves it beside gthread and granian (its revision and the "
        f"next); 'group messages: {DEFAULT_SERVER} / {GUNICORN}' is what the default server "
        "gives back over gthread today.",
    ]
    session.stop(other)  # the parts after this one run as before it
    del session.shared["gunicorn"]
    return section


def part_commands(session: Session) -> Section:
    """/start and a button press answered through the fake Bot API, against the bare endpoint."""
    sizes, ids, server = Sizes.of(session), Ids(), product(session)
    failures = handler_failures(server)
    fake_ms = _fake_round_trip(fake_api(session), 20 if session.quick else 300)
    targets = {
        "bare": Target("bare django-ninja endpoint", server, "/bench/bare"),
        "start": Target("/start (sendMessage)", server, "/telegram/webhook", "start"),
        "callback": Target(
            "panel button (editMessageText, answer in the webhook reply)",
            server,
            "/telegram/webhook",
            "callback",
        ),
    }
    rates = throughput(targets, ids, sizes)
    found = latencies({k: v for k, v in targets.items() if k != "bare"}, ids, sizes)
    section = Section("commands", "Commands through the fake Bot API")
    section.rows.append(
        Row(
            "fake Bot API: one sendMessage round trip (p50, client side)",
            f"{fake_ms:.2f} ms",
            "",
            "< 1 ms",
            check(fake_ms, 1, below=True),
        )
    )
    section.rows += rate_rows(targets, rates, "bare")
    for name in ("start", "callback"):
        label = f"{targets[name].label} / bare endpoint"
        section.rows.append(ratio_row(label, rates, name, "bare", 0.3, ">= 0.3x"))
    section.rows += latency_rows(targets, found)
    section.rows.append(failure_row(server, failures))
    section.notes.append(
        "The fake answers as the suite's (`tests/fakes`, every call checked against the Bot API "
        "spec) behind a lean asyncio HTTP/1.1 front with TCP_NODELAY (`bench/fake_api.py`); the "
        "product calls it from the request, so its round trip is inside every command's "
        "latency. The round trip is measured through the product's own client. A press "
        "answers itself in the webhook's reply (`answerCallbackQuery`, which Telegram makes: "
        "the load generator, playing Telegram, reads and drops it), so the product makes one "
        "call per press (editMessageText); before that change it made both."
    )
    return section


def _fake_round_trip(fake: Server, calls: int) -> float:
    """p50 of one sendMessage through the product's own client (``TelegramClient`` over its
    keep-alive transport), as a command pays it: httpx's default transport alone would add
    about half a millisecond of client work."""
    from telegram_bot.client import TelegramClient

    times = []
    with TelegramClient(TOKEN, fake.url("")) as client:
        for _ in range(calls):
            started = time.perf_counter()
            client.send_message(chat_id=OWNER + 1, text="ping")
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def part_memory(session: Session) -> Section:
    """Resident memory of the web and worker processes after the runs (a short load first when
    this part runs alone)."""
    server = product(session)
    if "ran" not in session.shared:
        saturate(server.url("/telegram/webhook"), Ids().load("group"), 2)
    section = Section("memory", "Memory")
    web = web_pids(server)
    workers = [harness.rss_mb(pid) for pid in web[1:]]
    threads = [harness.proc_field(pid, "Threads") for pid in web[1:]]
    pss = [harness.proc_field(pid, "Pss", "smaps_rollup") / 1024 for pid in web[1:]]
    heaviest = max(workers, default=0.0)
    section.rows.append(
        Row(
            f"web worker ({web_server_name(server)} process), resident",
            f"{heaviest:.0f} MB",
            f"{len(workers)} workers: "
            + ", ".join(f"{mb:.0f}" for mb in workers)
            + " MB; "
            + ", ".join(map(str, threads))
            + " threads",
            "< 100 MB",
            check(heaviest, 100, below=True),
            summary=True,
        )
    )
    section.rows.append(
        Row(
            "web worker, proportional set size (shared library pages divided)",
            f"{max(pss, default=0.0):.0f} MB",
            ", ".join(f"{mb:.0f}" for mb in pss) + " MB",
        )
    )
    main = f"{web_server_name(server)} main process, resident"
    section.rows.append(Row(main, f"{harness.rss_mb(web[0]):.0f} MB"))
    cluster = worker_pids(server)
    total = sum(harness.rss_mb(pid) for pid in cluster)
    section.rows.append(
        Row(
            "worker cluster (qcluster and its processes), resident",
            f"{total:.0f} MB",
            f"{len(cluster)} processes",
        )
    )
    aiogram = session.shared.get("peer")
    if isinstance(aiogram, Server):
        section.rows.append(
            Row("aiogram peer process, resident", f"{harness.rss_mb(aiogram.pid):.0f} MB")
        )
    section.notes.append(
        "VmRSS from /proc; forked processes share pages, so the sum over a "
        "cluster counts shared pages more than once."
    )
    section.notes.extend(MEMORY_NOTES)
    return section


# Where a web worker's memory goes, measured 2026-12-07 at 65d828b (busy machine; this part
# alone, a 2 s load first; per-module figures: tracemalloc attributing each allocation to the
# module being imported, and /proc/<pid>/smaps). Figures to re-measure when they move.
MEMORY_NOTES = [
    "The bench's servers import only what the image installs (`requirements.lock`): "
    "`bench/production_only` makes the dev venv's other packages unimportable in them. "
    "httpx's `__init__` loads its command-line client's rich and pygments when present: "
    "with them a worker measured 107-108 MB here, without 103-104 MB (two runs each).",
    "A bare `django.setup()` and `config.wsgi` is 91-95 MB VmRSS: 67 MB of Python objects "
    "(tracemalloc), most of them the code of the ~1,300 modules loaded: Django 15 MB, "
    "redis-py 6 MB (its `__init__` loads `redis.asyncio` as well), psycopg 4.4, pydantic 3.3, "
    "the project's apps about 11 (every feature's handlers serve the webhook), pydantic-"
    "settings with the settings model 2-3; and about 20 MB of shared-library pages "
    "(libpython, pydantic-core, granian, psycopg-binary's libcrypto and the system's), "
    "counted in VmRSS though the processes share them (the proportional row).",
    "Each thread granian starts for a waiting request adds 0.4-0.6 MB (its 2 MB stack, of "
    "which about 120 kB is touched; a psycopg connection; two redis-py connections, as an "
    "in-process run of 50 threads held; malloc arenas): wrk with 16 connections left "
    "about 20 threads and 110 MB, with 64 connections 71 threads and 128 MB. Granian's cap "
    "(`WEB_THREADS`, 128) stays: a request whose body is still arriving holds a thread, and "
    "the slow-client guarantee (100 slow bodies) needs them; behind a proxy that reads "
    "requests whole (compose's Caddy) a lower `WEB_THREADS` bounds this growth.",
    "Measured and not adopted: `MALLOC_ARENA_MAX=2` (104-105 MB against 105-107 MB "
    "alternating, within the noise), `PYTHONOPTIMIZE=2` (3.6 MB less at setup, but it drops "
    "`assert`s and the docstrings libraries read), `PYTHONNODEBUGRANGES=1` (0.5 MB less).",
]


def part_scaleout(session: Session) -> Section:
    """One web process against two behind a round-robin proxy, each with its worker cluster;
    CPU of every process group sampled over each run."""
    if "product" in session.shared:  # free the CPU it would take idling
        session.stop(session.shared.pop("product"))  # type: ignore[arg-type]
    sizes, ids = Sizes.of(session), Ids()
    database = session.database("scale")
    first, second = (serve(session, f"scale-{n}", database, "1") for n in ("a", "b"))
    configs = {
        "one web process, direct": ([first.port], False),
        "one web process behind the proxy": ([first.port], True),
        "two web processes behind the proxy": ([first.port, second.port], True),
    }
    section = Section("scaleout", "Scale-out sketch")
    results, cpu = {}, {}
    for label, (ports, proxied) in configs.items():
        proxy = None
        if proxied:
            port = harness.free_port()
            argv = [sys.executable, "bench/proxy.py", str(port), *map(str, ports)]
            proxy = session.start("proxy", argv, dict(os.environ), port, None)
            url = proxy.url("/telegram/webhook")
        else:
            url = first.url("/telegram/webhook")
        if sizes.warm:
            saturate(url, ids.load("group"), 1)
        groups = {
            "web process 1": lambda: web_pids(first)[1:],
            "web process 2": lambda: web_pids(second)[1:],
            "worker clusters": lambda: worker_pids(first) + worker_pids(second),
            "proxy": proxy.pids if proxy else list,
            "postgres (all)": lambda: harness.named("postgres"),
            "redis-server": lambda: harness.named("redis-server"),
        }
        rates, cpus = [], []
        for _ in range(sizes.rounds):
            watch = CpuWatch(groups)
            rates.append(saturate(url, ids.load("group"), sizes.seconds).rate)
            cpus.append(watch.stop())
        if proxy is not None:
            session.stop(proxy)
        cpu = {name: statistics.median(c[name] for c in cpus) for name in cpus[0]}
        results[label] = statistics.median(rates)
        section.rows.append(Row(label, f"{results[label]:.0f} updates/s", "", "", ""))
        section.details.append(
            f"CPU during '{label}' (cores; 1.0 = one core busy):\n"
            + "\n".join(f"  {name:<26} {value:5.2f}" for name, value in cpu.items())
        )
    one, two = (
        results["one web process behind the proxy"],
        results["two web processes behind the proxy"],
    )
    section.rows.append(
        Row(
            "two web processes / one (both behind the proxy)",
            f"{two / one:.2f}x",
            "",
            "",
            "",
            summary=True,
        )
    )
    section.notes.append(saturation_verdict(cpu))  # the last run's: two processes
    section.notes.append(
        f"Two `serve` instances ({DEFAULT_SERVER} with 1 process each, and "
        "each its own worker cluster) on one PostgreSQL database and one Redis; "
        "the proxy is `bench/proxy.py` (asyncio, round-robin per connection)."
    )
    return section


def saturation_verdict(cpu: dict[str, float]) -> str:
    capacity, busy = cpu.pop("machine capacity"), cpu["machine (all processes)"]
    own = {k: v for k, v in cpu.items() if k != "machine (all processes)"}
    top = max(own, key=lambda name: own[name])
    if busy >= 0.9 * capacity:
        return (
            f"What saturates first, two processes: the machine's CPU ({busy:.2f} of "
            f"{capacity:.0f} cores busy, other agents' work included); the largest share "
            f"is {top} at {own[top]:.2f} cores."
        )
    return (
        f"What saturates first, two processes: {top} at {own[top]:.2f} cores while the "
        f"machine had {capacity - busy:.2f} of {capacity:.0f} cores idle."
    )
