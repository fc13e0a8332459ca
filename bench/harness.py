"""Processes, databases and measurements shared by the parts of ``bench/run.py``.

Every server runs as its own process group on a free loopback port, with its output in
``bench/results/logs/``; ``Session.close`` stops them all. Databases are created per run from
one migrated template (``<name>_template``, then ``<name>_<part>``) and dropped at the end.
CPU and memory are read from ``/proc`` (Linux).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "bench" / "results" / "logs"
PEER_VENV = ROOT / "bench" / ".venv-peer"
PEER_LOCK = ROOT / "bench" / "requirements-peer.lock"
TOKEN = "123456789:AAFakeTokenForTestsOnly_0123456789abcdef"  # the fake's token shape  # noqa: S105
SECRET = "bench-secret"  # noqa: S105 - the webhook secret of the local bench servers
OWNER = 1000
TICKS = os.sysconf("SC_CLK_TCK")


def git_revision() -> str:
    """The checkout's short commit ('' outside a git checkout), for reports and profile names."""
    done = subprocess.run(
        [shutil.which("git") or "/usr/bin/git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


@dataclass
class Server:
    """A process group we started: ``pid`` leads it; ``port`` is where it serves."""

    name: str
    process: subprocess.Popen[bytes]
    port: int

    @property
    def pid(self) -> int:
        return self.process.pid

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def pids(self) -> list[int]:
        return descendants(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=12)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()


T = TypeVar("T")


@dataclass
class Session:
    """One bench run: where it writes, what it started, which databases it made."""

    database_url: str
    redis_url: str
    quick: bool
    offline: bool
    servers: list[Server] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)
    template: str | None = None
    shared: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shutil.rmtree(LOGS / "metrics", ignore_errors=True)  # the previous run's files

    def once(self, key: str, start: Callable[[], T]) -> T:
        """What ``start`` gives (a server), started the first time ``key`` is asked for and
        kept for the rest of the run."""
        if key not in self.shared:
            self.shared[key] = start()
        return cast(T, self.shared[key])

    # -- databases ------------------------------------------------------------------------
    def database(self, part: str) -> str:
        """A fresh, migrated database for ``part``: its URL."""
        base = database_name(self.database_url)
        if self.template is None:
            self.template = f"{base}_template"
            self._recreate(self.template)
            env = {
                **self.env(with_database(self.database_url, self.template)),
                "DJANGO_SETTINGS_MODULE": "bench.settings",
            }
            run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env, "migrate")
        name = f"{base}_{part}"
        self._recreate(name, template=self.template)
        return with_database(self.database_url, name)

    def empty_database(self, part: str) -> str:
        """A fresh database for ``part`` with no tables (dropped at the end of the run): its URL.
        For code that migrates it itself (another revision's)."""
        name = f"{database_name(self.database_url)}_{part}"
        self._recreate(name)
        return with_database(self.database_url, name)

    def _recreate(self, name: str, template: str | None = None) -> None:
        admin = with_database(self.database_url, "postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            suffix = f' TEMPLATE "{template}"' if template else ""
            conn.execute(f'CREATE DATABASE "{name}"{suffix}')
        if name not in self.databases:
            self.databases.append(name)

    # -- environment and processes --------------------------------------------------------
    def env(self, database_url: str, **extra: str) -> dict[str, str]:
        """The product's environment for a bench server on ``database_url``."""
        metrics = LOGS / "metrics" / (database_name(database_url) or "none")
        metrics.mkdir(parents=True, exist_ok=True)
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "Q_"))},
            "ENV_FILE": "/dev/null",
            "DATABASE_URL": database_url,
            "REDIS_URL": self.redis_url,
            "DJANGO_SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
            "DJANGO_DEBUG": "false",
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "OWNER_TELEGRAM_ID": str(OWNER),
            "PROMETHEUS_MULTIPROC_DIR": str(metrics),
            # The update path is measured against a fake Bot API without flood limits, at
            # loads past Telegram's 30 messages a second: the outgoing limiter would measure
            # Telegram's limits instead of the product (bench/broadcast.py measures those).
            "OUTGOING_LIMITS": "false",
            **extra,
        }

    def start(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        port: int,
        ready_path: str | None = "/healthz",
        cwd: Path = ROOT,
    ) -> Server:
        """``argv`` in ``cwd`` (the checkout; another revision's worktree for the
        ``workarounds`` part), its output in ``bench/results/logs/<name>.log``."""
        LOGS.mkdir(parents=True, exist_ok=True)
        log = (LOGS / f"{name}.log").open("wb")
        process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        server = Server(name, process, port)
        self.servers.append(server)
        wait_ready(server, ready_path)
        return server

    def stop(self, server: Server) -> None:
        server.stop()
        self.servers.remove(server)

    def stop_all(self) -> None:
        for server in reversed(self.servers):
            server.stop()
        self.servers.clear()
        self.shared.clear()

    def close(self) -> None:
        self.stop_all()
        admin = with_database(self.database_url, "postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in self.databases:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.databases.clear()
        flush_redis(self.redis_url)


def run(argv: list[str], env: dict[str, str], what: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def wait_ready(server: Server, path: str | None, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited ({server.process.returncode}); see "
                f"{LOGS / (server.name + '.log')}"
            )
        with contextlib.suppress(OSError, httpx.HTTPError):
            if path is None:
                socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
                return
            if httpx.get(server.url(path), timeout=2).status_code < 500:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{server.name} did not answer on port {server.port} in {timeout:.0f} s")


@contextlib.contextmanager
def private_redis(session: Session, name: str) -> Iterator[str]:
    """A redis-server of a part's own on a free port, without persistence and never evicting:
    its URL (``redis://host:port``, a database number to add). Its INFO (memory, CPU) counts
    only what the part sends, and the shared Redis is left alone."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(f"{name} needs redis-server on PATH")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="tgcp-bench-redis-")
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
            "no", "--maxmemory-policy", "noeviction", "--dir", workdir]  # fmt: skip
    server = session.start(name, argv, {}, port, None)
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        session.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)


def redis_keys(url: str) -> int:
    return int(redis.Redis.from_url(url).dbsize())


def flush_redis(url: str) -> None:
    redis.Redis.from_url(url).flushdb()


# -- /proc ----------------------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name_end = text.rindex(")")
    return [text[text.index("(") + 1 : name_end], *text[name_end + 2 :].split()]


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(int(stat[2]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def named(name: str) -> list[int]:
    """Every process whose command name is ``name`` (postgres, redis-server)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[0] == name:
            pids.append(int(entry.name))
    return pids


def cpu_seconds(pids: Iterable[int]) -> float:
    total = 0
    for pid in pids:
        if (stat := _stat(pid)) is not None:
            total += int(stat[12]) + int(stat[13])  # utime, stime
    return total / TICKS


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def proc_field(pid: int, name: str, path: str = "status") -> int:
    """A number of ``/proc/<pid>/<path>`` (``status``, ``smaps_rollup``): ``Threads``, ``Pss``
    (in kB) ...; 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far (all cores)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / TICKS, sum(fields) / TICKS


class CpuWatch:
    """CPU used by groups of processes over a stretch of time, in cores (1.0 = one core).

    A group is a function giving its processes now: a process that started meanwhile counts
    with all its CPU time, one that ended meanwhile is left out (its time is not readable)."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.start = {name: _per_process(pids()) for name, pids in groups.items()}
        self.machine = machine_busy()
        self.started = time.monotonic()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self.started
        used = {}
        for name, pids in self.groups.items():
            before = self.start[name]
            now = _per_process(pids())
            used[name] = sum(spent - before.get(pid, 0.0) for pid, spent in now.items()) / wall
        busy, total = machine_busy()
        used["machine (all processes)"] = (busy - self.machine[0]) / wall
        used["machine capacity"] = (total - self.machine[1]) / wall
        return used


def _per_process(pids: Iterable[int]) -> dict[int, float]:
    return {pid: cpu_seconds([pid]) for pid in pids}


PRODUCTION_ONLY = ROOT / "bench" / "production_only"


def production_only_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a server that can import only what the image installs
    (``requirements.lock``): ``bench/production_only/sitecustomize.py`` makes the top-level
    modules of every installed distribution the lock does not name unimportable."""
    paths = [str(PRODUCTION_ONLY), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {
        **env,
        "PYTHONPATH": os.pathsep.join(paths),
        "BENCH_ABSENT_MODULES": ",".join(absent_modules()),
    }


def absent_modules(lock: Path = ROOT / "requirements.lock") -> list[str]:
    """The top-level modules of the installed distributions that ``lock`` does not name (the
    dev and bench tools': pytest, rich, pygments ...)."""
    from importlib import metadata

    locked = {
        _distribution_key(line.split("==", 1)[0])
        for line in lock.read_text().splitlines()
        if line[:1].isalnum() and "==" in line
    }
    modules: set[str] = set()
    for dist in metadata.distributions():
        if _distribution_key(dist.metadata["Name"]) in locked:
            continue
        top_level = dist.read_text("top_level.txt")
        names = (
            top_level.split()
            if top_level
            else [f.parts[0].removesuffix(".py") for f in dist.files or () if len(f.parts) > 0]
        )
        modules.update(
            name
            for name in names
            if name.isidentifier() and not name.startswith("__") and "." not in name
        )
    return sorted(modules)


def _distribution_key(name: str) -> str:
    """A distribution's name as the lock and the metadata may spell it (PEP 503)."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()
