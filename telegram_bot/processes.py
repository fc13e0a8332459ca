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


def bounded_cluster_class() -> type[Any]:
    """django-q2's ``Cluster`` whose stop on SIGTERM/SIGINT ends within WORKER_STOP_SECONDS.

    Built on demand: importing django_q.cluster needs the app registry ready.
    """
    from django.conf import settings
    from django_q.cluster import Cluster

    class BoundedCluster(Cluster):
        stopping = False

        def sig_handler(self, signum: int, frame: Any) -> None:
            grace = float(settings.WORKER_STOP_SECONDS)
            if self.stopping or self.sentinel is None:
                # A second signal, or one before the sentinel exists: stop now.
                kill_tree(os.getpid(), include_root=False)
                return
            self.stopping = True
            log.info("worker: %s, stopping (at most %g s)", signal.Signals(signum).name, grace)
            deadline = time.monotonic() + grace
            stop_event = getattr(self, "stop_event", None)
            if stop_event is not None:
                stop_event.set()
            self.sentinel.join(timeout=max(0.0, deadline - time.monotonic()))
            busy = descendants(os.getpid())
            if busy:
                log.warning(
                    "worker: %d process(es) still busy after %g s, killed; their jobs are "
                    "claimed again when their lease runs out",
                    len(busy),
                    grace,
                )
                kill_tree(os.getpid(), include_root=False)
                self.sentinel.join(timeout=5)
            self.start_event = None
            self.stop_event = None

    return BoundedCluster
