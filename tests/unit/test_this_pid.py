"""``telegram_bot.processes.this_pid``: the process id the update path's "made in this
process?" checks ask, kept by a fork hook instead of a system call each time."""

from __future__ import annotations

import os

import pytest

from telegram_bot.processes import this_pid


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_this_pid_is_the_process_id_in_a_forked_child_too() -> None:
    assert this_pid() == os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own id, not its parent's
        os.write(write, f"{this_pid()} {os.getpid()}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    seen, actual = os.read(read, 64).decode().split()
    assert seen == actual == str(pid)
    assert this_pid() == os.getpid()
