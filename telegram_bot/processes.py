"""Stopping process trees within a deadline: the worker cluster and ``manage.py serve``.

django-q2's own stop waits for every running task to finish and never kills a worker, so a
SIGTERM (``docker stop``) during a long or stuck task can hang for as long as the task does,
and a parent killed meanwhile leaves its workers running under pid 1. Here every stop has a
deadline; what is still running then is killed, children included. Jobs tolerate that: a job
whose worker died is claimed again once its lease runs out (telegram_bot/jobs).

Linux only for the tree walk (``/proc``), which is where the product runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def this_pid() -> int:
    """This process's id, kept by a fork hook: what the update path's "made in this process?"
    checks ask (the liveness, the Redis store's connection, the write-behind), once or more a
    message, without a ``getpid`` system call each."""
    return _pid


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren, ...), parents first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rpartition(")")[2].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    queue = [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def kill_tree(pid: int, *, include_root: bool = True) -> list[int]:
    """SIGKILL ``pid``'s descendants (and ``pid``); returns the pids signalled.

    The tree is frozen first (SIGSTOP), so a supervisor cannot spawn a replacement, and no
    child is orphaned out of reach, between the walk and the kill.
    """
    frozen: set[int] = set()
    while True:
        tree = [pid, *descendants(pid)] if include_root else descendants(pid)
        new = [p for p in tree if p not in frozen]
        if not new:
            break
        for target in new:
            _signal(target, signal.SIGSTOP)
        frozen.update(new)
    for target in frozen:
        _signal(target, signal.SIGKILL)
    return sorted(frozen)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids: list[int], deadline: float) -> list[int]:
    """Wait until none of ``pids`` runs or ``time.monotonic()`` passes ``deadline``; returns
    those still running."""
    running = [pid for pid in pids if alive(pid)]
    while running and time.monotonic() < deadline:
        time.sleep(0.05)
        running = [pid for pid in running if alive(pid)]
    return running


def run_cluster(*, run_once: bool = False) -> None:
    """Run django-q2's cluster until SIGTERM or SIGINT, whose stop ends within
    WORKER_STOP_SECONDS: running tasks get that long, then the cluster's processes are killed.
    A second signal kills them at once.

    Through the ``Cluster`` API django-q2 documents (``start``, ``stop``, ``sentinel``): its
    own signal handlers, which stop without a bound, are replaced by ours once it has set
    them, and its ``stop`` runs in a thread that this one waits for with a deadline.
    Built on demand: importing django_q.cluster needs the app registry ready.
    """
    from django.conf import settings
    from django_q.cluster import Cluster

    grace = float(settings.WORKER_STOP_SECONDS)
    stop_requested = threading.Event()
    root = os.getpid()

    def on_signal(signum: int, frame: Any) -> None:
        if os.getpid() != root:
            return  # a forked child before it set its own handlers
        if stop_requested.is_set():
            kill_tree(root, include_root=False)  # a second signal: now
            return
        log.info("worker: %s, stopping (at most %g s)", signal.Signals(signum).name, grace)
        stop_requested.set()  # the main thread stops the cluster once it has started

    cluster = Cluster()  # sets django-q2's handlers, replaced here
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        cluster.start()
    except RuntimeError:
        if stop_requested.is_set():
            return  # killed by a second signal while starting, as asked
        raise
    while not run_once and not stop_requested.wait(0.5):
        pass
    stopper = threading.Thread(target=cluster.stop, name="cluster-stop", daemon=True)
    stopper.start()
    stopper.join(grace)
    if stopper.is_alive():
        busy = descendants(root)
        log.warning(
            "worker: %d process(es) still busy after %g s, killed; their jobs are claimed "
            "again when their lease runs out",
            len(busy),
            grace,
        )
        kill_tree(root, include_root=False)
        stopper.join(5)
