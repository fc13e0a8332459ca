"""Helpers for the tests that start real processes (servers, the worker) of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request


def wait_until_healthy(port: int, timeout: float = 60) -> None:
    """Return once ``/healthz`` on the loopback ``port`` answers 200, or after ``timeout``
    seconds (the test's own requests then fail and say why)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:  # not listening yet, or not 200 (HTTPError is an OSError)
            time.sleep(0.2)


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``process`` leads (started with ``start_new_session``) if it
    is still running, and reap it: a failed test leaves no server behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
